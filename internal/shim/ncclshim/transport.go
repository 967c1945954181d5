package ncclshim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// deviceTransport is the setup's transport: the real NCCL's all-gather of
// device memory on a stream of the shim's, waited for by polling, so that
// a wait ends at ctx's deadline or at Abort (ctx) rather than hanging on a
// peer that will never come.
type deviceTransport struct {
	real   Real
	dev    Device
	h      Handle
	world  int
	stream uintptr
	buf    uintptr // (world+1)*cap bytes: the send part, then the received
	cap    int
	// inflight: a round was queued and has not finished.
	inflight bool
}

func newDeviceTransport(real Real, dev Device, h Handle, world int, follow uintptr) (*deviceTransport, error) {
	s, err := dev.NewStream()
	if err != nil {
		return nil, err
	}
	if follow != 0 {
		if err := dev.Follow(s, follow); err != nil {
			dev.DestroyStream(s)
			return nil, err
		}
	}
	return &deviceTransport{real: real, dev: dev, h: h, world: world, stream: s}, nil
}

// pollTransport is how often a round's completion is checked.
const pollTransport = 20 * time.Microsecond

func (t *deviceTransport) allGather(ctx context.Context, send []byte) ([]byte, error) {
	n := len(send)
	if n > t.cap {
		if t.buf != 0 {
			t.dev.Free(t.buf)
			t.buf = 0
		}
		p, err := t.dev.Alloc((t.world + 1) * n)
		if err != nil {
			return nil, err
		}
		t.buf, t.cap = p, n
	}
	if err := t.dev.CopyIn(t.buf, send); err != nil {
		return nil, err
	}
	r := t.real.AllGather(t.h, t.buf, t.buf+uintptr(n), n, t.stream)
	if r != nccl.Success && r != nccl.InProgress {
		return nil, fmt.Errorf("detcoll: the setup's ncclAllGather failed (%d)", r)
	}
	t.inflight = true
	// A nonblocking communicator may still be queuing the all-gather: the
	// stream is the round's only once NCCL says the queuing ended.
	queued := r == nccl.Success
	wait := pollTransport
	for {
		if !queued {
			switch r := t.real.AsyncError(t.h); r {
			case nccl.Success:
				queued = true
				continue
			case nccl.InProgress:
			default:
				return nil, fmt.Errorf("detcoll: the setup's ncclAllGather failed while queued (%d)", r)
			}
		} else if done, err := t.dev.Done(t.stream); err != nil {
			return nil, err
		} else if done {
			break
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("%w: waiting for the peers' setup exchange", detcoll.ErrTimeout)
			}
			return nil, fmt.Errorf("%w: the setup exchange", detcoll.ErrAborted)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Millisecond)
	}
	t.inflight = false
	out := make([]byte, t.world*n)
	if err := t.dev.CopyOut(out, t.buf+uintptr(n)); err != nil {
		return nil, err
	}
	return out, nil
}

// close frees the transport's memory, unless a round never finished (a
// peer died): NCCL's all-gather is still queued and may yet write there,
// so its few bytes are left to the process rather than to whoever would
// allocate them next. Destroying the stream lets that round run out when
// the communicator is aborted.
func (t *deviceTransport) close() {
	if t.buf != 0 && !t.inflight {
		t.dev.Free(t.buf)
	}
	t.buf = 0
	t.dev.DestroyStream(t.stream)
}
