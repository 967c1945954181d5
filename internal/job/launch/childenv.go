package launch

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"

	"github.com/detcoll/detcoll/internal/job/jobenv"
)

// childEnv is the environment of rank: base (from jobenv.Strip) plus the
// variables jobenv.FromEnv reads. All ranks run on this host, so the local
// rank and world are the global ones.
func childEnv(base []string, rank, world, port int, secret string) []string {
	job := jobenv.Job{Rank: rank, World: world, LocalRank: rank, LocalWorld: world,
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Secret: secret}
	// The full slice expression makes append copy: ranks share no array.
	return append(base[:len(base):len(base)], job.Environ()...)
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
