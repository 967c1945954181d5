package jobenv

import (
	"errors"
	"strconv"
	"testing"
)

// getenvOf is a getenv over "NAME=value" pairs.
func getenvOf(kv ...string) func(string) string {
	m := make(map[string]string)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(name string) string { return m[name] }
}

func TestFromEnv(t *testing.T) {
	const secret = "s3cret"
	slurm := func(kv ...string) []string {
		return append([]string{envSlurmRank, "5", envSlurmWorld, "8", envSlurmLocalRank, "1", envSecret, secret}, kv...)
	}
	tests := []struct {
		name string
		env  []string
		want Job
	}{
		{
			name: "detcoll run",
			env: []string{envRank, "2", envWorld, "4", envLocalRank, "2", envLocalWorld, "4",
				envMasterAddr, "127.0.0.1", envMasterPort, "29400", envSecret, secret},
			want: Job{2, 4, 2, 4, "127.0.0.1:29400", secret, SourceEnv},
		},
		{
			name: "hand set, one host, world of one",
			env:  []string{envRank, "0", envWorld, "1"},
			want: Job{0, 1, 0, 1, "127.0.0.1:29500", "", SourceEnv},
		},
		{
			name: "torchrun agent store takes MASTER_PORT",
			env: []string{envRank, "3", envWorld, "8", envLocalRank, "1", envLocalWorld, "2", envRunID, "abc",
				envAgentStore, "True", envMasterAddr, "node0", envMasterPort, "29500", envSecret, secret},
			want: Job{3, 8, 1, 2, "node0:29501", secret, SourceTorchrun},
		},
		{
			name: "bracketed IPv6 MASTER_ADDR",
			env:  []string{envRank, "0", envWorld, "2", envMasterAddr, "[::1]", envMasterPort, "7", envSecret, secret},
			want: Job{0, 2, 0, 2, "[::1]:7", secret, SourceEnv},
		},
		{
			name: "DETCOLL_ADDR overrides MASTER_ADDR and the agent store",
			env: []string{envRank, "1", envWorld, "2", envMasterAddr, "a", envMasterPort, "1", envAgentStore, "True",
				envAddr, "[fe80::1%eth0]:4000", envSecret, secret},
			want: Job{1, 2, 1, 2, "[fe80::1%eth0]:4000", secret, SourceEnv},
		},
		{
			name: "RANK wins over Open MPI and Slurm",
			env: []string{envRank, "0", envWorld, "1", envOMPIRank, "3", envOMPIWorld, "4",
				envSlurmRank, "2", envSlurmWorld, "3"},
			want: Job{0, 1, 0, 1, "127.0.0.1:29500", "", SourceEnv},
		},
		{
			name: "Open MPI wins over Slurm, default port from PMIx namespace",
			env: []string{envOMPIRank, "3", envOMPIWorld, "4", envOMPILocalRank, "3", envOMPILocalWorld, "4",
				envPMIxNamespace, "prterun-host-123@1", envSlurmRank, "2", envSlurmWorld, "3", envSecret, secret},
			want: Job{3, 4, 3, 4, "127.0.0.1:" + strconv.Itoa(defaultPortFor("prterun-host-123@1")), secret, SourceOpenMPI},
		},
		{
			name: "Open MPI without a job id",
			env:  []string{envOMPIRank, "1", envOMPIWorld, "2", envSecret, secret},
			want: Job{1, 2, 1, 2, "127.0.0.1:29500", secret, SourceOpenMPI},
		},
		{
			name: "no address or secret for torchrun variables: the caller's to find",
			env:  []string{envRank, "1", envWorld, "2", envRunID, "x"},
			want: Job{1, 2, 1, 2, "", "", SourceTorchrun},
		},
		{
			name: "no address for Open MPI on several hosts",
			env: []string{envOMPIRank, "0", envOMPIWorld, "4", envOMPILocalRank, "0", envOMPILocalWorld, "2",
				envPMIxNamespace, "ns"},
			want: Job{0, 4, 0, 2, "", "", SourceOpenMPI},
		},
		{
			name: "Slurm step layout, later node",
			env:  slurm(envSlurmNodeID, "2", envSlurmStepTasksPerNode, "3,2(x2)", envAddr, "n0:9"),
			want: Job{5, 8, 1, 2, "n0:9", secret, SourceSlurm},
		},
		{
			name: "Slurm step layout beats an inherited --ntasks-per-node",
			env: slurm(envSlurmNodeID, "0", envSlurmStepTasksPerNode, "8", envSlurmNTasksPerNode, "16",
				envSlurmJobID, "77", envSlurmStepID, "0"),
			want: Job{5, 8, 1, 8, "127.0.0.1:" + strconv.Itoa(defaultPortFor("77.0")), secret, SourceSlurm},
		},
		{
			name: "Slurm --ntasks-per-node without a node id",
			env:  slurm(envSlurmNTasksPerNode, "4", envMasterAddr, "n0", envMasterPort, "9"),
			want: Job{5, 8, 1, 4, "n0:9", secret, SourceSlurm},
		},
		{
			name: "Slurm allocation layout",
			env:  slurm(envSlurmNodeID, "1", envSlurmTasksPerNode, "4(x2)", envAddr, "n0:9"),
			want: Job{5, 8, 1, 4, "n0:9", secret, SourceSlurm},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := FromEnv(getenvOf(tt.env...))
			if err != nil || !found || got != tt.want {
				t.Errorf("FromEnv = %+v, %v, %v; want %+v, true, nil\nenv: %q", got, found, err, tt.want, tt.env)
			}
		})
	}
}

func TestFromEnvNotFound(t *testing.T) {
	for _, env := range [][]string{
		nil,
		{envMasterAddr, "h", envMasterPort, "1", envAddr, "h:1", envSecret, "x"},
		{envLocalRank, "0", envLocalWorld, "1"},        // without RANK/WORLD_SIZE: not torchrun
		{envSlurmWorld, "4", envSlurmJobID, "1"},       // an salloc shell is not a rank
		{envOMPILocalRank, "0", envPMIxNamespace, "x"}, // nor is an Open MPI singleton's helper
	} {
		job, found, err := FromEnv(getenvOf(env...))
		if job != (Job{}) || found || err != nil {
			t.Errorf("FromEnv = %+v, %v, %v; want zero, false, nil\nenv: %q", job, found, err, env)
		}
	}
}

func TestFromEnvErrors(t *testing.T) {
	ok := []string{envMasterAddr, "h", envMasterPort, "1", envSecret, "s"}
	torch := func(rank, world string, kv ...string) []string {
		return append(append([]string{envRank, rank, envWorld, world}, ok...), kv...)
	}
	slurm := func(kv ...string) []string {
		return append(append([]string{envSlurmRank, "1", envSlurmWorld, "4", envSlurmLocalRank, "1"}, ok...), kv...)
	}
	tests := []struct {
		name    string
		env     []string
		wantVar string
	}{
		{"rank not a number", torch("x", "4"), envRank},
		{"rank with spaces", torch(" 1", "4"), envRank},
		{"rank negative", torch("-1", "4"), envRank},
		{"rank at world", torch("4", "4"), envRank},
		{"rank over int", torch("99999999999999999999", "4"), envRank},
		{"world zero", torch("0", "0"), envWorld},
		{"world negative", torch("0", "-2"), envWorld},
		{"world too big", torch("0", strconv.Itoa(MaxWorld+1)), envWorld},
		{"world missing", []string{envRank, "1"}, envWorld},
		{"rank missing", []string{envWorld, "2"}, envRank},
		{"local world missing", torch("1", "4", envLocalRank, "1"), envLocalWorld},
		{"local rank missing", torch("1", "4", envLocalWorld, "2"), envLocalRank},
		{"local rank at local world", torch("1", "4", envLocalRank, "2", envLocalWorld, "2"), envLocalRank},
		{"local world above world", torch("1", "4", envLocalRank, "1", envLocalWorld, "8"), envLocalWorld},
		{"MASTER_PORT missing", []string{envRank, "0", envWorld, "2", envMasterAddr, "h", envSecret, "s"}, envMasterPort},
		{"MASTER_ADDR missing", []string{envRank, "0", envWorld, "2", envMasterPort, "1", envSecret, "s"}, envMasterAddr},
		{"MASTER_PORT zero", torch("0", "2", envMasterPort, "0"), envMasterPort},
		{"MASTER_PORT too big", torch("0", "2", envMasterPort, "65536"), envMasterPort},
		{"MASTER_PORT not a number", torch("0", "2", envMasterPort, "http"), envMasterPort},
		{"agent store port overflows", torch("0", "2", envMasterPort, "65535", envAgentStore, "True"), envMasterPort},
		{"MASTER_ADDR with a space", torch("0", "2", envMasterAddr, "a b"), envMasterAddr},
		{"MASTER_ADDR a URL", torch("0", "2", envMasterAddr, "tcp://h"), envMasterAddr},
		{"DETCOLL_ADDR without port", torch("0", "2", envAddr, "h"), envAddr},
		{"DETCOLL_ADDR without host", torch("0", "2", envAddr, ":1"), envAddr},
		{"DETCOLL_ADDR port zero", torch("0", "2", envAddr, "h:0"), envAddr},
		{"Open MPI size missing", []string{envOMPIRank, "0"}, envOMPIWorld},
		{"Slurm tasks missing", []string{envSlurmRank, "0"}, envSlurmWorld},
		{"Slurm local world unknown", slurm(), envSlurmNTasksPerNode},
		{"Slurm node id not a number", slurm(envSlurmNodeID, "x", envSlurmStepTasksPerNode, "4"), envSlurmNodeID},
		{"Slurm node id negative", slurm(envSlurmNodeID, "-1", envSlurmStepTasksPerNode, "4"), envSlurmNodeID},
		{"Slurm node beyond layout", slurm(envSlurmNodeID, "3", envSlurmStepTasksPerNode, "2(x2),1"), envSlurmNodeID},
		{"Slurm layout unclosed", slurm(envSlurmNodeID, "0", envSlurmStepTasksPerNode, "2(x2"), envSlurmStepTasksPerNode},
		{"Slurm layout zero tasks", slurm(envSlurmNodeID, "0", envSlurmStepTasksPerNode, "0"), envSlurmStepTasksPerNode},
		{"Slurm layout zero nodes", slurm(envSlurmNodeID, "0", envSlurmTasksPerNode, "2(x0)"), envSlurmTasksPerNode},
		{"Slurm layout local rank too big", slurm(envSlurmNodeID, "0", envSlurmStepTasksPerNode, "1,3"), envSlurmLocalRank},
		{"Slurm per-node request malformed", slurm(envSlurmNTasksPerNode, "2(x2)"), envSlurmNTasksPerNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, found, err := FromEnv(getenvOf(tt.env...))
			var ee *EnvError
			if !errors.As(err, &ee) || ee.Var != tt.wantVar || !found || job != (Job{}) {
				t.Errorf("FromEnv = %+v, %v, %v; want an *EnvError for %s\nenv: %q", job, found, err, tt.wantVar, tt.env)
			}
		})
	}
}
