package cuda

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testSocket returns an abstract socket name no other test uses.
func testSocket(t *testing.T) string {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("@detcoll-test/%d/%s/%x", os.Getpid(), t.Name(), b)
}

// fdsOf returns this process's descriptors open on the file at path
// (other tests may open and close others meanwhile).
func fdsOf(t *testing.T, path string) []int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var fds []int
	for _, e := range es {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == path {
			fd, _ := strconv.Atoi(e.Name())
			fds = append(fds, fd)
		}
	}
	return fds
}

// servedFile is a plain file's descriptor served on a fresh socket to
// want ranks, all closed in t.Cleanup.
type servedFile struct {
	name  string
	path  string
	fd    int
	token [fdTokenLen]byte
	srv   *fdServer
}

func serveFile(t *testing.T, want int, timeout time.Duration) *servedFile {
	t.Helper()
	s := &servedFile{name: testSocket(t), path: filepath.Join(t.TempDir(), "window")}
	if err := os.WriteFile(s.path, []byte("the allocation"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(s.path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.fd = fd
	rand.Read(s.token[:])
	if s.srv, err = listenFD(s.name, fd, s.token, want, timeout); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.srv.Close()
		if s.fd >= 0 {
			syscall.Close(s.fd)
		}
	})
	return s
}

// sameFile reports whether fd is the file at path, read from its start.
func sameFile(t *testing.T, fd int, path string) {
	t.Helper()
	var got, want syscall.Stat_t
	if err := syscall.Fstat(fd, &got); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(path, &want); err != nil {
		t.Fatal(err)
	}
	if got.Dev != want.Dev || got.Ino != want.Ino {
		t.Errorf("descriptor %d is inode %d of device %d, want the file's %d of %d", fd, got.Ino, got.Dev, want.Ino, want.Dev)
	}
	b := make([]byte, 64)
	n, err := syscall.Pread(fd, b, 0)
	if err != nil || string(b[:n]) != "the allocation" {
		t.Errorf("read %q, %v through descriptor %d; want %q", b[:n], err, fd, "the allocation")
	}
	if flags, err := fcntlGetFD(fd); err != nil || flags&syscall.FD_CLOEXEC == 0 {
		t.Errorf("descriptor %d: flags %#x, %v; want close-on-exec", fd, flags, err)
	}
}

func fcntlGetFD(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// TestFDPassing: three peers fetch the exporter's descriptor at once over
// its abstract socket; each gets a copy of its own of the same file. The
// server stops by itself once it served them, Close says whom it served,
// and no descriptor of the file is left open.
func TestFDPassing(t *testing.T) {
	s := serveFile(t, 3, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	fds := make([]int, 4)
	errs := make([]error, 4)
	for rank := 1; rank <= 3; rank++ {
		wg.Go(func() { fds[rank], errs[rank] = fetchFD(ctx, s.name, s.token, rank) })
	}
	wg.Wait()
	for rank := 1; rank <= 3; rank++ {
		if errs[rank] != nil {
			t.Fatalf("rank %d: %v", rank, errs[rank])
		}
		if fds[rank] == s.fd {
			t.Errorf("rank %d got the exporter's own descriptor %d", rank, fds[rank])
		}
		sameFile(t, fds[rank], s.path)
		syscall.Close(fds[rank])
	}
	select {
	case <-s.srv.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the server still runs after serving every rank")
	}
	served := s.srv.Close()
	slices.Sort(served)
	if !slices.Equal(served, []int{1, 2, 3}) {
		t.Errorf("served %v, want [1 2 3]", served)
	}
	syscall.Close(s.fd)
	s.fd = -1
	if fds := fdsOf(t, s.path); len(fds) != 0 {
		t.Errorf("descriptors %v still open on the file", fds)
	}
}

// TestFDPassingRefused: a wrong token, or no server at all, fails at
// once and leaves no descriptor open; the server goes on serving the
// right token.
func TestFDPassingRefused(t *testing.T) {
	s := serveFile(t, 1, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wrong := s.token
	wrong[0] ^= 1
	for _, tc := range []struct {
		name  string
		sock  string
		token [fdTokenLen]byte
	}{
		{"wrong token", s.name, wrong},
		{"no server", testSocket(t) + "/none", s.token},
	} {
		start := time.Now()
		fd, err := fetchFD(ctx, tc.sock, tc.token, 1)
		if err == nil {
			syscall.Close(fd)
			t.Errorf("%s: got descriptor %d, want an error", tc.name, fd)
			continue
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: failed after %v, want at once", tc.name, took)
		}
		t.Logf("%s: %v", tc.name, err)
	}
	if fds := fdsOf(t, s.path); !slices.Equal(fds, []int{s.fd}) {
		t.Errorf("descriptors %v open on the file, want the exporter's alone (%d)", fds, s.fd)
	}
	fd, err := fetchFD(ctx, s.name, s.token, 1)
	if err != nil {
		t.Fatalf("the right token after a wrong one: %v", err)
	}
	sameFile(t, fd, s.path)
	syscall.Close(fd)
}

// TestFDPassingBounded: a server that accepts and never answers holds a
// fetch only until its context ends (deadline or cancel), and the error
// says so; a peer that connects and says nothing holds the server only
// until Close, which returns at once, or until its own timeout.
func TestFDPassingBounded(t *testing.T) {
	name := testSocket(t)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // never answered
			mu.Unlock()
		}
	}()
	var token [fdTokenLen]byte

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := fetchFD(ctx, name, token, 1)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want an error matching context.DeadlineExceeded", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("returned after %v, want about 200ms", took)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		_, err := fetchFD(ctx, name, token, 1)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want an error matching context.Canceled", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("returned after %v, want about 200ms", took)
		}
	})
	t.Run("silent peer, Close", func(t *testing.T) {
		s := serveFile(t, 1, time.Minute)
		c, err := net.Dial("unix", s.name)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		time.Sleep(100 * time.Millisecond) // the server is reading from it now
		start := time.Now()
		if served := s.srv.Close(); len(served) != 0 {
			t.Errorf("served %v, want none", served)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Close took %v with a silent peer, want at once", took)
		}
	})
	t.Run("silent peer holds up no one", func(t *testing.T) {
		// A stray process's connection that never asks (any user may
		// connect to an abstract socket) must not make the ranks wait
		// for it, whatever the communicator's timeout.
		s := serveFile(t, 1, time.Hour)
		c, err := net.Dial("unix", s.name)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		time.Sleep(100 * time.Millisecond) // the server is reading from it now
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		fd, err := fetchFD(ctx, s.name, s.token, 1)
		if err != nil {
			t.Fatalf("beside a silent peer: %v", err)
		}
		syscall.Close(fd)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("served after %v beside a silent peer, want at once", took)
		}
	})
}

// TestFDPassingNameTaken: a second server on a name in use fails (two
// registrations never share a socket), and the first goes on serving.
func TestFDPassingNameTaken(t *testing.T) {
	s := serveFile(t, 1, 10*time.Second)
	if srv, err := listenFD(s.name, s.fd, s.token, 1, time.Second); err == nil {
		srv.Close()
		t.Fatalf("a second server on %s started", s.name)
	} else {
		t.Logf("as expected: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fd, err := fetchFD(ctx, s.name, s.token, 1)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, fd, s.path)
	syscall.Close(fd)
}
