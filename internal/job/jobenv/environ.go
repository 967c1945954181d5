package jobenv

import (
	"net"
	"strconv"
	"strings"
)

// Environ returns the variables, "NAME=value", that make FromEnv return
// j with Source SourceEnv: RANK, WORLD_SIZE, LOCAL_RANK and
// LOCAL_WORLD_SIZE, then MASTER_ADDR and MASTER_PORT when j.Addr is set
// (host:port) and DETCOLL_SECRET when j.Secret is. These are the
// variables of torchrun, which any rank of detcoll reads. j.Source is not
// written. A launcher appends them to an environment from Strip.
func (j Job) Environ() []string {
	env := []string{
		envRank + "=" + strconv.Itoa(j.Rank),
		envWorld + "=" + strconv.Itoa(j.World),
		envLocalRank + "=" + strconv.Itoa(j.LocalRank),
		envLocalWorld + "=" + strconv.Itoa(j.LocalWorld),
	}
	if host, port, err := net.SplitHostPort(j.Addr); err == nil {
		env = append(env, envMasterAddr+"="+host, envMasterPort+"="+port)
	}
	if j.Secret != "" {
		env = append(env, envSecret+"="+j.Secret)
	}
	return env
}

// launcherPrefixes name the variables of other launchers. Left in a
// child's environment, DETCOLL_ADDR or TORCHELASTIC_USE_AGENT_STORE would
// redirect its rendezvous, and the rest would only confuse a reader of
// it.
var launcherPrefixes = []string{"OMPI_", "PMIX_", "SLURM_", "TORCHELASTIC_"}

// ownVars are the variables Environ writes, and DETCOLL_ADDR, which would
// override them.
var ownVars = []string{
	envRank, envWorld, envLocalRank, envLocalWorld,
	envMasterAddr, envMasterPort, envAddr, envSecret,
}

// Strip returns a copy of env without the variables that Environ writes
// or that would override them, and without those of other launchers
// (OMPI_*, PMIX_*, SLURM_*, TORCHELASTIC_*): what is left cannot make
// FromEnv see a job, so a child gets exactly the one Environ describes.
func Strip(env []string) []string {
	out := make([]string, 0, len(env)+len(ownVars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !dropVar(name) {
			out = append(out, kv)
		}
	}
	return out
}

func dropVar(name string) bool {
	for _, p := range launcherPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, v := range ownVars {
		if name == v {
			return true
		}
	}
	return false
}
