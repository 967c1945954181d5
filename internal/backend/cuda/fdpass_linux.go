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
	"slices"
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

// fdServer serves one file descriptor over a listening socket, from a
// goroutine that listenFD starts and Close stops, and a goroutine per
// connection: a connection that stalls (a stray process's, say) holds up
// no one else.
type fdServer struct {
	ln      *net.UnixListener
	fd      int // not the server's: its owner closes it after Close
	token   [fdTokenLen]byte
	want    int           // the ranks to serve: the listener closes once it served as many
	timeout time.Duration // bounds each connection
	done    chan struct{} // closed when serve and every connection's goroutine returned

	mu     sync.Mutex
	conns  map[*net.UnixConn]bool // the connections being served; guarded by mu
	closed bool                   // Close was called; guarded by mu
	served []int                  // the ranks given the descriptor; guarded by mu
}

// fdRequestWait bounds the wait for a request once a peer connected: a
// peer writes it as soon as it connects, so a longer wait is a stray
// connection's.
const fdRequestWait = 5 * time.Second

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
	s := &fdServer{ln: ln, fd: fd, token: token, want: want, timeout: timeout, done: make(chan struct{}), conns: make(map[*net.UnixConn]bool)}
	go s.serve()
	return s, nil
}

// serve accepts connections until the listener closes: at Close, once
// want ranks were served, or on an error. The listener is closed then
// whatever the cause, so that a peer still to ask fails at once instead
// of waiting in the backlog.
func (s *fdServer) serve() {
	var wg sync.WaitGroup
	defer func() {
		s.ln.Close()
		wg.Wait()
		close(s.done)
	}()
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = true
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rank, ok := s.serveConn(conn)
			conn.Close()
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.conns, conn)
			if ok && !slices.Contains(s.served, rank) {
				s.served = append(s.served, rank)
				if len(s.served) >= s.want {
					s.ln.Close() // serve returns
				}
			}
		}()
	}
}

// serveConn reads one request from conn and, where it comes from a
// process of this user and shows the right token, sends the descriptor.
// It returns the rank served.
func (s *fdServer) serveConn(conn *net.UnixConn) (int, bool) {
	if !sameUser(conn) {
		return 0, false
	}
	wait := fdRequestWait
	if s.timeout > 0 && s.timeout < wait {
		wait = s.timeout
	}
	conn.SetDeadline(time.Now().Add(wait))
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

// sameUser reports whether conn's other end runs as this process's user
// (SO_PEERCRED): the ranks of a job do, and the token alone would let any
// user who read it from a leaked log ask.
func sameUser(conn *net.UnixConn) bool {
	rc, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	var cred *syscall.Ucred
	var credErr error
	if err := rc.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return false
	}
	return cred.Uid == uint32(os.Getuid())
}

// Close stops serving: it closes the listener and the connections being
// served, and waits for their goroutines. It returns the ranks served.
func (s *fdServer) Close() []int {
	s.mu.Lock()
	s.closed = true
	for conn := range s.conns {
		conn.Close()
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

// closeOnExec marks a descriptor the driver made: it is not close-on-exec,
// and a child started meanwhile would hold the allocation.
func closeOnExec(fd int) { syscall.CloseOnExec(fd) }

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
