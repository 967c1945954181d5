//go:build !linux

package cuda

import (
	"context"
	"errors"
	"time"
)

// Off Linux there are no abstract sockets to pass a descriptor over, and
// no CUDA driver this package can load: windows of cuMemCreate memory are
// unavailable.

const fdTokenLen = 16

var errNoFDPassing = errors.New("passing a file descriptor needs Linux")

type fdServer struct{}

func listenFD(name string, fd int, token [fdTokenLen]byte, want int, timeout time.Duration) (*fdServer, error) {
	return nil, errNoFDPassing
}

func (s *fdServer) Close() []int { return nil }

func fetchFD(ctx context.Context, name string, token [fdTokenLen]byte, rank int) (int, error) {
	return -1, errNoFDPassing
}

func closeFD(fd int) {}

func closeOnExec(fd int) {}
