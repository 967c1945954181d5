package jobenv

import (
	"errors"
	"net"
	"strconv"
	"testing"
)

// fuzzVars are the variables FuzzFromEnv sets, one fuzzed string each.
var fuzzVars = [19]string{
	envRank, envWorld, envLocalRank, envLocalWorld, envMasterAddr, envMasterPort, envAgentStore,
	envOMPIRank, envOMPIWorld, envOMPILocalRank, envOMPILocalWorld,
	envSlurmRank, envSlurmWorld, envSlurmLocalRank, envSlurmNodeID, envSlurmStepTasksPerNode, envSlurmNTasksPerNode,
	envAddr, envSecret,
}

func FuzzFromEnv(f *testing.F) {
	seeds := [][]string{
		{envRank, "2", envWorld, "4", envLocalRank, "2", envLocalWorld, "4", envMasterAddr, "127.0.0.1", envMasterPort, "29400", envSecret, "s"},
		{envRank, "0", envWorld, "1"},
		{envRank, "3", envWorld, "8", envLocalRank, "1", envLocalWorld, "2", envAgentStore, "True", envMasterAddr, "::1", envMasterPort, "65535", envSecret, "s"},
		{envRank, "4", envWorld, "4"},
		{envWorld, "-1"},
		{envOMPIRank, "1", envOMPIWorld, "2", envSecret, "s"},
		{envOMPIRank, "0", envOMPIWorld, "4", envOMPILocalRank, "0", envOMPILocalWorld, "2", envAddr, "[fe80::1%eth0]:1", envSecret, "s"},
		{envSlurmRank, "5", envSlurmWorld, "8", envSlurmLocalRank, "1", envSlurmNodeID, "2", envSlurmStepTasksPerNode, "3,2(x2)", envAddr, "n0:9", envSecret, "s"},
		{envSlurmRank, "0", envSlurmWorld, "2", envSlurmLocalRank, "0", envSlurmNodeID, "0", envSlurmStepTasksPerNode, "2(x", envSecret, "s"},
		{envSlurmRank, "1", envSlurmWorld, "2", envSlurmLocalRank, "1", envSlurmNTasksPerNode, "2", envSecret, "s"},
		{envAddr, "h:1"},
	}
	for _, kv := range seeds {
		get := getenvOf(kv...)
		var v [19]string
		for i, name := range fuzzVars {
			v[i] = get(name)
		}
		f.Add(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17], v[18])
	}
	f.Fuzz(func(t *testing.T, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18 string) {
		vals := []string{a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18}
		env := make(map[string]string, len(vals))
		for i, v := range vals {
			env[fuzzVars[i]] = v
		}
		getenv := func(name string) string { return env[name] }

		job, found, err := FromEnv(getenv)
		job2, found2, err2 := FromEnv(getenv)
		if job != job2 || found != found2 || (err == nil) != (err2 == nil) {
			t.Fatalf("FromEnv is not deterministic: %+v, %v, %v then %+v, %v, %v", job, found, err, job2, found2, err2)
		}
		if err != nil {
			var ee *EnvError
			if !errors.As(err, &ee) || ee.Var == "" || !found || job != (Job{}) {
				t.Fatalf("FromEnv = %+v, %v, %v; want zero, true and an *EnvError naming a variable", job, found, err)
			}
			return
		}
		if !found {
			if job != (Job{}) {
				t.Fatalf("FromEnv = %+v, false, nil; want a zero Job", job)
			}
			return
		}
		if job.Rank < 0 || job.Rank >= job.World || job.World > MaxWorld ||
			job.LocalRank < 0 || job.LocalRank >= job.LocalWorld || job.LocalWorld > job.World {
			t.Fatalf("FromEnv = %+v: ranks out of range", job)
		}
		if job.Secret != env[envSecret] || job.Source == "" {
			t.Fatalf("FromEnv = %+v: secret not DETCOLL_SECRET, or no source", job)
		}
		// What a launcher writes for the job reads back as the same job.
		back, found, err := FromEnv(getenvOf(pairs(job.Environ())...))
		want := job
		want.Source = SourceEnv
		if err != nil || !found || back != want {
			t.Fatalf("FromEnv(%q) = %+v, %v, %v; want %+v", job.Environ(), back, found, err, want)
		}
		if job.Addr == "" {
			if job.World == 1 || env[envAddr] != "" || env[envMasterAddr] != "" {
				t.Fatalf("FromEnv = %+v: no address, though one was given or defaults", job)
			}
			return
		}
		host, port, perr := net.SplitHostPort(job.Addr)
		p, _ := strconv.Atoi(port)
		if perr != nil || host == "" || p < 1 || p > 65535 {
			t.Fatalf("FromEnv = %+v: Addr is not host:port", job)
		}
	})
}
