package ncclshim

import (
	"errors"
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/nccl"
)

// The reductions. Each returns the result for the caller and whether the C
// boundary must hand the call to the real NCCL instead (then the result is
// Success and means nothing). Every rank takes the same branch for the
// same call: the branches depend on the arguments, which NCCL requires to
// match across ranks, on the group depth, which the ranks' common program
// sets alike, and on the communicator's state, which the setup's agreement
// round makes the same everywhere.

// AllReduce is ncclAllReduce.
func (s *Shim) AllReduce(send, recv uintptr, count int, dt nccl.DataType, op nccl.RedOp, h Handle, stream uintptr, inGroup bool) (nccl.Result, bool) {
	return s.serve(h, dt, op, stream, inGroup, "AllReduce", func(c *comm, dtype detcoll.DType) (nccl.Result, bool) {
		if err := s.allReduce(c, send, recv, count, dtype, stream, false); err != nil {
			return s.failComm(c, err), false
		}
		return nccl.Success, false
	})
}

// serve runs a sum reduction's body on c, with c.mu held, once the
// communicator, the type and the operation are ones detcoll serves; what
// names the call in hand-off messages.
func (s *Shim) serve(h Handle, dt nccl.DataType, op nccl.RedOp, stream uintptr, inGroup bool, what string, body func(c *comm, dtype detcoll.DType) (nccl.Result, bool)) (nccl.Result, bool) {
	c := s.lookup(h)
	if c == nil {
		return nccl.Success, true // not a communicator the shim saw made
	}
	dtype, ok := detcollType(dt)
	if op != nccl.Sum || !ok {
		return s.handOff("%s of %v with %v is not one detcoll makes deterministic", what, dt, op)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, handed, ok := s.ready(c, stream, inGroup, what); !ok {
		return r, handed
	}
	return body(c, dtype)
}

// allReduce sums count elements in calls that fit the capacity: element i
// of a sum depends only on the ranks' elements i, so the pieces give the
// bits of one call. Each piece lands at its offset in recv, or, when
// discard, at recv's start (Reduce's scratch off the root: the stream
// orders the pieces, and nobody reads them).
func (s *Shim) allReduce(c *comm, send, recv uintptr, count int, dt detcoll.DType, stream uintptr, discard bool) error {
	size := dt.Size()
	chunk := int(s.settings.Capacity) / size
	for off := 0; off < count; off += chunk {
		n := min(chunk, count-off)
		b := uintptr(off * size)
		out := recv + b
		if discard {
			out = recv
		}
		if err := c.dc.AllReduceDevice(detcoll.DevicePtr(send+b), detcoll.DevicePtr(out), n, dt, detcoll.Stream(stream)); err != nil {
			return err
		}
	}
	return nil
}

// ReduceScatter is ncclReduceScatter.
func (s *Shim) ReduceScatter(send, recv uintptr, recvCount int, dt nccl.DataType, op nccl.RedOp, h Handle, stream uintptr, inGroup bool) (nccl.Result, bool) {
	return s.serve(h, dt, op, stream, inGroup, "ReduceScatter", func(c *comm, dtype detcoll.DType) (nccl.Result, bool) {
		if total := int64(recvCount) * int64(c.world) * int64(dtype.Size()); total > s.settings.Capacity {
			// Its pieces would not be contiguous: one call or none.
			return s.handOff("ReduceScatter of %d bytes per rank is over the capacity of %d bytes (set %s)", total, s.settings.Capacity, EnvCapacity)
		}
		if recvCount == 0 {
			return nccl.Success, false
		}
		if err := c.dc.ReduceScatterDevice(detcoll.DevicePtr(send), detcoll.DevicePtr(recv), recvCount, dtype, detcoll.Stream(stream)); err != nil {
			return s.failComm(c, err), false
		}
		return nccl.Success, false
	})
}

// Reduce is ncclReduce: an all-reduce whose result only the root keeps;
// the other ranks sum into scratch memory of the shim's, since NCCL lets
// their recvbuff be anything (NULL, or the input of an in-place call).
func (s *Shim) Reduce(send, recv uintptr, count int, dt nccl.DataType, op nccl.RedOp, root int, h Handle, stream uintptr, inGroup bool) (nccl.Result, bool) {
	return s.serve(h, dt, op, stream, inGroup, "Reduce", func(c *comm, dtype detcoll.DType) (nccl.Result, bool) {
		if root < 0 || root >= c.world {
			return s.fail(fmt.Errorf("%w: Reduce: root %d out of range [0, %d)", detcoll.ErrInvalid, root, c.world)), false
		}
		if !c.reduced {
			// The scratch is allocated at the first Reduce, which a CUDA
			// graph capture forbids. Every rank decides alike (the root,
			// which needs none, too): the first Reduce is every rank's.
			if capturing, err := s.dev.Capturing(stream); err == nil && capturing {
				return s.handOff("Reduce: a communicator's first Reduce must not be captured in a CUDA graph (detcoll allocates its scratch memory there): run one before capturing")
			}
			if c.rank != root {
				p, err := s.dev.Alloc(int(s.settings.Capacity))
				if err != nil {
					return s.fail(fmt.Errorf("detcoll: Reduce: scratch memory: %w", err)), false
				}
				c.scratch = p
			}
			c.reduced = true
		}
		out, discard := recv, false
		if c.rank != root {
			out, discard = c.scratch, true
		}
		if err := s.allReduce(c, send, out, count, dtype, stream, discard); err != nil {
			return s.failComm(c, err), false
		}
		return nccl.Success, false
	})
}

// ready makes sure detcoll serves c, setting it up on first use; c.mu is
// held. When it does not, it returns what the call must do instead.
func (s *Shim) ready(c *comm, stream uintptr, inGroup bool, what string) (r nccl.Result, handed, ok bool) {
	if c.state == pending {
		switch capturing, err := s.dev.Capturing(stream); {
		case inGroup:
			// The setup's own NCCL calls would join the caller's group
			// and wait for its end: never.
			r, handed = s.handOff("%v: a communicator's first sum reduction must not be inside ncclGroupStart/End (detcoll sets up there)", what)
			return r, handed, false
		case err == nil && capturing:
			r, handed = s.handOff("%v: a communicator's first sum reduction must not be captured in a CUDA graph (detcoll sets up there): run one before capturing", what)
			return r, handed, false
		}
		s.setup(c, stream)
	}
	switch c.state {
	case served:
		return nccl.Success, false, true
	case broken:
		return s.fail(c.err), false, false
	}
	r, handed = s.handOff("%v: %s", what, c.why)
	return r, handed, false
}

// failComm turns a detcoll call's error into the caller's result. A bad
// argument leaves the communicator as it was; any other failure poisons
// it, as it poisons detcoll's.
func (s *Shim) failComm(c *comm, err error) nccl.Result {
	if !errors.Is(err, detcoll.ErrInvalid) {
		c.state, c.err = broken, err
	}
	return s.fail(err)
}

// resultOf is the NCCL result for a detcoll error.
func resultOf(err error) nccl.Result {
	switch {
	case err == nil:
		return nccl.Success
	case errors.Is(err, detcoll.ErrInvalid):
		return nccl.InvalidArgument
	case errors.Is(err, detcoll.ErrMismatch), errors.Is(err, detcoll.ErrClosed):
		return nccl.InvalidUsage
	case errors.Is(err, detcoll.ErrPeerLost), errors.Is(err, detcoll.ErrAborted), errors.Is(err, detcoll.ErrTimeout):
		return nccl.RemoteError
	case errors.Is(err, detcoll.ErrUnavailable):
		return nccl.SystemError
	}
	return nccl.InternalError
}
