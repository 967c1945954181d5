package launch

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// inheritedPrefixes name the variables of other launchers. Run keeps them
// from its ranks: left in place, DETCOLL_ADDR or TORCHELASTIC_USE_AGENT_STORE
// would redirect a rank's rendezvous, and the rest would only confuse a
// reader of the rank's environment.
var inheritedPrefixes = []string{"OMPI_", "PMIX_", "SLURM_", "TORCHELASTIC_"}

// ownVars are the variables Run sets, removed from the base environment
// first so that each appears once.
var ownVars = []string{
	envRank, envWorld, envLocalRank, envLocalWorld,
	envMasterAddr, envMasterPort, envAddr, envSecret,
}

// baseEnv returns env without the variables that childEnv sets or that
// belong to other launchers.
func baseEnv(env []string) []string {
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
	for _, p := range inheritedPrefixes {
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

// childEnv is the environment of rank: base (from baseEnv) plus the
// variables FromEnv reads. All ranks run on this host, so the local rank and
// world are the global ones.
func childEnv(base []string, rank, world, port int, secret string) []string {
	// The full slice expression makes append copy: ranks share no array.
	return append(base[:len(base):len(base)],
		envRank+"="+strconv.Itoa(rank),
		envWorld+"="+strconv.Itoa(world),
		envLocalRank+"="+strconv.Itoa(rank),
		envLocalWorld+"="+strconv.Itoa(world),
		envMasterAddr+"=127.0.0.1",
		envMasterPort+"="+strconv.Itoa(port),
		envSecret+"="+secret,
	)
}

// newSecret returns 32 random bytes in hex.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails: since Go 1.24 it crashes the program instead
	return hex.EncodeToString(b)
}

// freePort returns a loopback TCP port that was free a moment ago. Another
// process may take it before rank 0 binds it, as with torchrun --standalone;
// rank 0 then fails to listen and the job fails with it.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("launch: find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port, nil
}
