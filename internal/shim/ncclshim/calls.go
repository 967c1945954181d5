package ncclshim

import (
	"errors"
	"fmt"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// The reductions. Every rank takes the same branch for the same call: the
// branches depend on the arguments, which NCCL requires to match across
// ranks, on whether the call is inside a group and whether its stream is
// capturing, which the ranks' common program sets alike, and on the
// communicator's state, which the setup's agreement round makes the same
// everywhere.

// Kind is a reduction of NCCL's.
type Kind int

const (
	AllReduce Kind = iota
	ReduceScatter
	Reduce
)

func (k Kind) String() string {
	switch k {
	case AllReduce:
		return "AllReduce"
	case ReduceScatter:
		return "ReduceScatter"
	case Reduce:
		return "Reduce"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Call is one reduction call, as NCCL's C API takes it.
type Call struct {
	Kind       Kind
	Send, Recv uintptr
	// Count is count for AllReduce and Reduce, recvcount for
	// ReduceScatter.
	Count  int
	DType  nccl.DataType
	Op     nccl.RedOp
	Root   int // Reduce
	Comm   Handle
	Stream uintptr
}

// Verdict says what became of a call.
type Verdict int

const (
	// Done: the shim made the call (or refused it); its result stands.
	Done Verdict = iota
	// Handed: the C boundary must make it with the real NCCL now.
	Handed
	// Deferred: it is inside a group and runs at the group's end
	// (GroupEnd), whose result reports it.
	Deferred
)

// Do is ncclAllReduce, ncclReduceScatter and ncclReduce. group is the
// calling thread's group (0 outside ncclGroupStart/End): a call detcoll
// may serve is deferred to the group's end, where it runs beside the
// group's other operations, as NCCL runs a group's operations together.
//
// detcoll serves every operator of NCCL's but the product (types.go):
// sum, average, max and min of the float and integer types, and the
// PreMulSum operators made through the library (premul.go) of the float
// types. The integer ones give NCCL's bits too (they are exact in any
// order), but served they take their turn on the communicator with its
// other served calls and show in the record; where detcoll cannot serve
// one, it is handed silently, in both modes.
func (s *Shim) Do(call Call, group uint64) (nccl.Result, Verdict) {
	start := s.rec.now()
	c := s.lookup(call.Comm)
	op := s.operatorOf(c, call)
	if c == nil {
		return s.handOff(op.key, "%v on a communicator libdetcoll-nccl did not see made (not by ncclCommInitRank, ncclCommInitRankConfig, ncclCommInitRankScalable, ncclCommSplit or ncclCommShrink through it)", call.Kind)
	}
	if op.why != "" {
		return s.handOff(op.key, "%s", op.why)
	}
	if group != 0 {
		c.mu.Lock()
		if c.state == pending {
			// Where detcoll can never serve it, the call stays in the
			// group, handed, rather than run by NCCL after the group.
			if err := s.dev.Ready(); err != nil {
				c.state, c.why = unserved, fmt.Sprintf("detcoll could not set it up: %v", err)
			}
		}
		st := c.state
		c.mu.Unlock()
		if st == pending || st == served {
			s.groups.add(group, &pendingCall{call: call, op: op, c: c})
			return nccl.Success, Deferred
		}
		// Handed or failed now, as outside the group.
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.run(c, call, &op, call.Stream, start)
}

// run makes call on c's detcoll communicator with op, queued on stream
// after its last call (follow), setting it up first if it is pending;
// c.mu is held.
func (s *Shim) run(c *comm, call Call, op *operator, stream uintptr, start time.Time) (nccl.Result, Verdict) {
	k := op.key
	if r, v, ok := s.ready(c, stream, k); !ok {
		return r, v
	}
	if call.Kind == ReduceScatter && c.gather.ptr == 0 && gathers(c, call.Count, op.dt) {
		// Its gathering memory is allocated at the first call that needs
		// it, which a CUDA graph capture would not survive.
		if capturing, err := s.dev.Capturing(stream); err == nil && capturing {
			return s.handOff(k, "ReduceScatter: a communicator's first reduce-scatter larger than its capacity (%s per rank) must not be captured in a CUDA graph (detcoll allocates its gathering memory there): make one before capturing", formatBytes(c.capacity))
		}
	}
	if err := s.follow(c, stream); err != nil {
		return s.fail(err), Done
	}
	queued := s.rec.now()
	if err := s.queue(c, call, op, stream); err != nil {
		return s.failComm(c, err), Done
	}
	s.rec.served(k, start, queued)
	return nccl.Success, Done
}

// queue queues call's pieces on stream; c is served.
func (s *Shim) queue(c *comm, call Call, op *operator, stream uintptr) error {
	if call.Count == 0 {
		return nil
	}
	switch call.Kind {
	case AllReduce:
		return s.allReduce(c, call.Send, call.Recv, call.Count, op, stream, false)
	case Reduce:
		if call.Root < 0 || call.Root >= c.world {
			return fmt.Errorf("%w: Reduce: root %d out of range [0, %d)", detcoll.ErrInvalid, call.Root, c.world)
		}
		if c.rank == call.Root {
			return s.allReduce(c, call.Send, call.Recv, call.Count, op, stream, false)
		}
		// NCCL lets recvbuff off the root be anything (NULL, or the
		// input of an in-place call): the results go to the discard.
		d, err := s.discardOf(c.device)
		if err != nil {
			return err
		}
		return s.allReduce(c, call.Send, d.ptr, call.Count, op, stream, true)
	case ReduceScatter:
		return s.reduceScatter(c, call.Send, call.Recv, call.Count, op, stream)
	}
	return fmt.Errorf("%w: %v", detcoll.ErrInvalid, call.Kind)
}

// allReduce reduces count elements in calls that fit the capacity: element
// i of a reduction depends only on the ranks' elements i (and a rank's
// PreMulSum factor, the same for every piece), so the pieces give the bits
// of one call. Each piece lands at its offset in recv, or, when discard,
// at recv's start (the discard: nobody reads it).
func (s *Shim) allReduce(c *comm, send, recv uintptr, count int, op *operator, stream uintptr, discard bool) error {
	size := op.dt.Size()
	chunk := int(c.capacity) / size
	for off := 0; off < count; off += chunk {
		n := min(chunk, count-off)
		b := uintptr(off * size)
		out := recv + b
		if discard {
			out = recv
		}
		if err := c.dc.AllReduceDevice(detcoll.DevicePtr(send+b), detcoll.DevicePtr(out), n, op.dt, detcoll.Stream(stream), op.ops...); err != nil {
			return err
		}
	}
	return nil
}

// reduceScatter gives this rank its n elements of the reduction of every
// rank's world*n. A call larger than the capacity is cut into pieces of m
// elements per rank; piece k's input, the k-th m elements of every rank's
// part, is gathered into c.gather (world copies on the stream) and
// reduce-scattered from there, which gives the bits of one call, as for
// all-reduce.
func (s *Shim) reduceScatter(c *comm, send, recv uintptr, n int, op *operator, stream uintptr) error {
	dt := op.dt
	size := dt.Size()
	if !gathers(c, n, dt) {
		return c.dc.ReduceScatterDevice(detcoll.DevicePtr(send), detcoll.DevicePtr(recv), n, dt, detcoll.Stream(stream), op.ops...)
	}
	if c.gather.ptr == 0 {
		p, err := s.dev.Alloc(int(c.capacity))
		if err != nil {
			return fmt.Errorf("detcoll: ReduceScatter: %s of gathering memory: %w", formatBytes(c.capacity), err)
		}
		c.gather = region{p, c.capacity}
		s.gathering.Add(c.capacity)
	}
	m := int(c.capacity) / (c.world * size)
	for off := 0; off < n; off += m {
		k := min(m, n-off)
		for p := range c.world {
			src := send + uintptr((p*n+off)*size)
			if err := s.dev.CopyAsync(c.gather.ptr+uintptr(p*k*size), src, k*size, stream); err != nil {
				return fmt.Errorf("detcoll: ReduceScatter: gather piece: %w", err)
			}
		}
		if err := c.dc.ReduceScatterDevice(detcoll.DevicePtr(c.gather.ptr), detcoll.DevicePtr(recv+uintptr(off*size)), k, dt, detcoll.Stream(stream), op.ops...); err != nil {
			return err
		}
	}
	return nil
}

// gathers reports whether a reduce-scatter of n elements per rank is
// larger than c's capacity: cut into pieces, gathered.
func gathers(c *comm, n int, dt detcoll.DType) bool {
	return int64(n)*int64(c.world)*int64(dt.Size()) > c.capacity
}

// ready makes sure detcoll serves c, setting it up on first use; c.mu is
// held. When it does not, it returns what the call must do instead.
func (s *Shim) ready(c *comm, stream uintptr, k callKey) (r nccl.Result, v Verdict, ok bool) {
	if c.state == pending {
		if capturing, err := s.dev.Capturing(stream); err == nil && capturing {
			r, v = s.handOff(k, "%v: a communicator's first reduction detcoll serves must not be captured in a CUDA graph (detcoll sets up there): make one before capturing, or set %s=init", k.kind, EnvSetup)
			return r, v, false
		}
		s.setup(c, stream)
	}
	switch c.state {
	case served:
		return nccl.Success, Done, true
	case broken:
		return s.fail(c.err), Done, false
	}
	r, v = s.handOff(k, "%v: %s", k.kind, c.why)
	return r, v, false
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
