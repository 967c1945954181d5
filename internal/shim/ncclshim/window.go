package ncclshim

import (
	"context"
	"fmt"

	"github.com/detcoll/detcoll"
)

// Windows (ncclCommWindowRegister, NCCL 2.27): memory every rank registers
// with a communicator, collectively. The real NCCL registers it first, for
// its own kernels; then detcoll registers it too (detcoll.Comm's
// RegisterDevice), so that a served all-reduce or reduce-scatter whose
// buffers lie in windows takes detcoll's registered path, with no copy
// through its staging. The cuMemCreate memory that ncclMemAlloc hands
// out registers too: it shares as a POSIX file descriptor, which NCCL
// asks for when it creates it. Where detcoll cannot (memory that shares
// neither over CUDA IPC nor so; a communicator not served; a registration
// inside a group), the window is NCCL's alone and detcoll's calls take
// their unregistered path: the same bits, more copies.
//
// ncclCommRegister is not taken: each rank registers on its own there, in
// an order no peer knows, and detcoll's registered path needs every rank's
// buffers registered (a rank's buffers in windows while a peer's are not is
// a mismatch).

// Windowed is what the shim needs of a detcoll communicator to register
// windows; OpenDetcoll's communicators have it.
type Windowed interface {
	RegisterWindow(ctx context.Context, addr uintptr, size int) (Deregisterer, error)
}

// Deregisterer gives one window back (detcoll.Window).
type Deregisterer interface {
	Deregister(ctx context.Context) error
}

// detcollComm is a detcoll communicator as the shim holds it.
type detcollComm struct{ *detcoll.Comm }

// RegisterWindow is RegisterDevice.
func (c detcollComm) RegisterWindow(ctx context.Context, addr uintptr, size int) (Deregisterer, error) {
	w, err := c.RegisterDevice(ctx, detcoll.DevicePtr(addr), size)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// WindowRegister is ncclCommWindowRegister after the real NCCL made win
// over [addr, addr+size) of h: detcoll registers it too where it can,
// setting the communicator up first if it is not yet (the registration is
// collective, so every rank is here). group is the caller's group, 0
// outside one: inside one the real NCCL may not have the communicator
// usable yet, so detcoll leaves the window alone.
func (s *Shim) WindowRegister(h Handle, addr uintptr, size int, win uintptr, group uint64) {
	c := s.lookup(h)
	if c == nil || group != 0 || size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == pending && c.hosts <= 1 {
		s.setup(c, 0)
	}
	if c.state != served {
		return
	}
	wd, ok := c.dc.(Windowed)
	if !ok || c.hosts > 1 {
		s.debugf("communicator %#x: window %#x is NCCL's alone: detcoll registers windows on one host only", c.h, win)
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, s.settings.Timeout)
	defer cancel()
	w, err := wd.RegisterWindow(ctx, addr, size)
	if err != nil {
		s.debugf("communicator %#x: window %#x (%d bytes at %#x) is NCCL's alone: %v", c.h, win, size, addr, err)
		return
	}
	if c.windows == nil {
		c.windows = map[uintptr]Deregisterer{}
	}
	c.windows[win] = w
	s.debugf("communicator %#x: window %#x (%d bytes at %#x) registered with detcoll too", c.h, win, size, addr)
}

// WindowDeregister is ncclCommWindowDeregister, before the real NCCL's:
// detcoll gives back its side of win, collectively, if it has one.
func (s *Shim) WindowDeregister(h Handle, win uintptr) {
	c := s.lookup(h)
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.windows[win]
	if !ok {
		return
	}
	delete(c.windows, win)
	ctx, cancel := context.WithTimeout(c.ctx, s.settings.Timeout)
	defer cancel()
	if err := w.Deregister(ctx); err != nil {
		s.debugf("communicator %#x: window %#x: detcoll's deregistration: %v", c.h, win, err)
	}
}

func (s *Shim) debugf(format string, args ...any) {
	if s.Debug != nil {
		s.Debug(fmt.Sprintf(format, args...))
	}
}
