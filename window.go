package detcoll

import (
	"context"
	"sync"

	"github.com/detcoll/detcoll/internal/core/base"
)

// A Window is device memory that every rank registered with a
// communicator (RegisterDevice), as NCCL's ncclCommWindowRegister does:
// its peers map it, so an all-reduce whose input and output both lie in
// windows, 16-byte aligned, reads and writes the ranks' buffers where they
// are, with no copy through the communicator's staging (a two-shot:
// (W-1)/W of the message read and written over the links by each rank,
// against twice that for the unregistered path). A reduce-scatter in
// windows (its output a multiple of 16 bytes) reads its part of every
// rank's input where it lies and writes only its own output. Calls below
// the small-call threshold, all-gathers and broadcasts take the
// unregistered path, windows or not. The bits are the same as without
// windows: the tree is the same.
//
// Every rank must register its windows, and pass windows' memory to the
// same calls: a call whose buffers lie in windows on some ranks and not on
// others fails on every rank with a mismatch (the signatures say which
// ranks had their buffers registered), never with wrong results. Ranks may
// place their buffers at different offsets of their windows.
type Window struct {
	c   *Comm
	row int

	mu   sync.Mutex // guards done
	done bool
}

// windowBackend is what a backend implements to register memory.
type windowBackend interface {
	Register(ctx context.Context, addr uint64, size int) (int, error)
	Deregister(ctx context.Context, row int) error
}

// RegisterDevice registers size bytes of this rank's device memory at buf
// as a Window. It is collective: every rank registers one window of its
// own (sizes may differ), and every rank registers and deregisters its
// windows in the same order. A window lies in one allocation, of
// cuMemAlloc (what PyTorch's caching allocator hands out; shared over
// CUDA IPC) or of cuMemCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
// among its handle types (what NCCL's ncclMemAlloc hands out; shared as a
// file descriptor over a Unix socket between the ranks of this host).
// Memory that shares neither way (cuMemCreate's without that handle type,
// a window across two allocations) fails with ErrUnavailable on every
// rank, naming the rank and why, and calls on it take the unregistered
// path. Windows may not overlap. A communicator holds at most 256 at
// once; Close gives them all back.
func (c *Comm) RegisterDevice(ctx context.Context, buf DevicePtr, size int) (*Window, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	wb, ok := c.device.(windowBackend)
	if !ok {
		return nil, base.Invalidf("RegisterDevice on a %s communicator: windows need Backend \"cuda\" on one host", c.opts.Backend)
	}
	if err := c.backend.Err(); err != nil {
		return nil, err
	}
	row, err := wb.Register(ctx, uint64(buf), size)
	if err != nil {
		return nil, err
	}
	return &Window{c: c, row: row}, nil
}

// Deregister gives the window back. It is collective, in the order of the
// registrations; no call that uses the window may still be queued or
// running (Synchronize the streams of its calls first), as for NCCL's
// ncclCommWindowDeregister. The caller may free the memory once it
// returns, even with an error. A second Deregister does nothing.
func (w *Window) Deregister(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.c.isClosed() {
		w.done = true
		return nil
	}
	w.done = true
	return w.c.device.(windowBackend).Deregister(ctx, w.row)
}
