package cuda

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Passing a file descriptor to the peers on this host: the exporter of a
// window of cuMemCreate memory listens on a Unix socket and hands each
// peer that asks for it, with the right token, a copy of the allocation's
// descriptor (SCM_RIGHTS). The socket is abstract (its name starts with
// "@"): no file to clean up, gone when closed or when the process dies.
// Anyone on the host may connect to it, so the descriptor goes only to a
// peer that shows the token, which the rendezvous carried.
//
// pidfd_getfd would spare the socket, but it needs ptrace permission over
// the exporter, which sibling processes are usually refused (Yama).

// fdTokenLen is the length of the token a peer shows to get the
// descriptor.
const fdTokenLen = 16

// fdRequestLen is a request: the token, then the asking rank (uint32).
const fdRequestLen = fdTokenLen + 4

// fdServer serves one file descriptor over a listening socket, from one
// goroutine that listenFD starts and Close stops.
type fdServer struct {
	ln      *net.UnixListener
	fd      int // not the server's: its owner closes it after Close
	token   [fdTokenLen]byte
	want    int           // the ranks to serve: serve returns once it served as many
	timeout time.Duration // bounds each connection
	done    chan struct{} // closed when serve returns

	mu     sync.Mutex
	conn   *net.UnixConn // the connection being served; guarded by mu
	closed bool          // Close was called; guarded by mu
	served []int         // the ranks given the descriptor; guarded by mu
}

// listenFD listens on the abstract socket name ("@...") and serves fd to
// want peers that show token, each connection bounded by timeout, until
// Close. It does not take fd: its caller closes it after Close.
func listenFD(name string, fd int, token [fdTokenLen]byte, want int, timeout time.Duration) (*fdServer, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		return nil, err // it names the socket
	}
	// An abstract socket leaves no file, and Close must not try to
	// remove one.
	ln.SetUnlinkOnClose(false)
	s := &fdServer{ln: ln, fd: fd, token: token, want: want, timeout: timeout, done: make(chan struct{})}
	go s.serve()
	return s, nil
}

// serve accepts connections one at a time until it has served want ranks
// or the listener closes. A connection that shows a wrong token, or does
// not finish within the timeout, is dropped.
func (s *fdServer) serve() {
	defer close(s.done)
	seen := make(map[int]bool)
	for len(seen) < s.want {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			return // closed; or broken, and then the peers fail to fetch
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conn = conn
		s.mu.Unlock()
		if rank, ok := s.serveConn(conn); ok {
			seen[rank] = true
			s.mu.Lock()
			s.served = append(s.served, rank)
			s.mu.Unlock()
		}
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
		conn.Close()
	}
}

// serveConn reads one request from conn and, where its token is right,
// sends the descriptor. It returns the rank served.
func (s *fdServer) serveConn(conn *net.UnixConn) (int, bool) {
	if s.timeout > 0 {
		conn.SetDeadline(time.Now().Add(s.timeout))
	}
	var req [fdRequestLen]byte
	if _, err := io.ReadFull(conn, req[:]); err != nil {
		return 0, false
	}
	if subtle.ConstantTimeCompare(req[:fdTokenLen], s.token[:]) != 1 {
		conn.Write([]byte{0})
		return 0, false
	}
	rank := int(binary.LittleEndian.Uint32(req[fdTokenLen:]))
	if _, _, err := conn.WriteMsgUnix([]byte{1}, syscall.UnixRights(s.fd), nil); err != nil {
		return 0, false
	}
	return rank, true
}

// Close stops serving: it closes the listener and the connection being
// served, and waits for the goroutine. It returns the ranks served.
func (s *fdServer) Close() []int {
	s.mu.Lock()
	s.closed = true
	if s.conn != nil {
		s.conn.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// fetchFD asks the server at name for its descriptor, showing token as
// rank, and returns this process's copy (close-on-exec), which the caller
// closes. ctx bounds every wait: a server that is gone fails at once, one
// that does not answer fails when ctx ends.
func fetchFD(ctx context.Context, name string, token [fdTokenLen]byte, rank int) (int, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", name)
	if err != nil {
		return -1, err // it names the socket
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	var req [fdRequestLen]byte
	copy(req[:], token[:])
	binary.LittleEndian.PutUint32(req[fdTokenLen:], uint32(rank))
	if _, err := conn.Write(req[:]); err != nil {
		return -1, fmt.Errorf("ask %s: %w", name, ctxErr(ctx, err))
	}
	var b [1]byte
	oob := make([]byte, syscall.CmsgSpace(4))
	n, oobn, flags, _, err := conn.ReadMsgUnix(b[:], oob)
	fds := parseRights(oob[:oobn])
	switch {
	case err != nil:
		err = fmt.Errorf("receive from %s: %w", name, ctxErr(ctx, err))
	case n != 1 || b[0] != 1:
		err = fmt.Errorf("%s refused the request", name)
	case flags&syscall.MSG_CTRUNC != 0 || len(fds) != 1:
		err = fmt.Errorf("%s sent %d descriptors, want 1", name, len(fds))
	}
	if err != nil {
		closeFDs(fds)
		return -1, err
	}
	return fds[0], nil
}

// parseRights returns the descriptors that the control messages oob
// carry.
func parseRights(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if msgs[i].Header.Level != syscall.SOL_SOCKET || msgs[i].Header.Type != syscall.SCM_RIGHTS {
			continue
		}
		if r, err := syscall.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}

// closeFD closes a descriptor this package was handed.
func closeFD(fd int) {
	if fd >= 0 {
		syscall.Close(fd)
	}
}

// ctxErr is err, or ctx's error too where ctx ended the wait.
func ctxErr(ctx context.Context, err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	cause := ctx.Err()
	if dl, ok := ctx.Deadline(); cause == nil && ok && !time.Now().Before(dl) {
		cause = context.DeadlineExceeded // its deadline is the connection's, which may fire first
	}
	if cause == nil {
		return err
	}
	return fmt.Errorf("%w (%v)", cause, err)
}
