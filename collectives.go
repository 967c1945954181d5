package detcoll

import "github.com/detcoll/detcoll/internal/core/base"

// AllReduce reduces in over all ranks into out, element by element, with
// the fixed tree: out[i] = T(in_0[i], ..., in_{W-1}[i]) on every rank, the
// same bits whatever the size, offset or path. It sums unless given
// another operator (op: at most one; see RedOp). out may be in (in
// place); otherwise they must not overlap. It waits for every peer's
// input.
func AllReduce[T Element](c *Comm, in, out []T, op ...RedOp) error {
	return c.do1(base.OpAllReduce, DTypeOf[T](), op, 0, bytesOf(in), bytesOf(out), 1)
}

// ReduceScatter reduces in (W*n elements) over all ranks and gives rank r
// the elements [r*n, (r+1)*n) of the result in out (n elements): bit for
// bit the same elements AllReduce with op would give. out may be in place, as in NCCL: the
// rank's own share of the input, in[r*n:(r+1)*n] (it is read before it is
// overwritten); otherwise in and out must not overlap (ErrInvalid).
func ReduceScatter[T Element](c *Comm, in, out []T, op ...RedOp) error {
	return c.do1(base.OpReduceScatter, DTypeOf[T](), op, 0, bytesOf(in), bytesOf(out), 1)
}

// AllGather concatenates every rank's in (n elements) into out (W*n), in
// rank order, byte for byte. in may be out's own slot
// out[rank*n:(rank+1)*n] (in place); otherwise they must not overlap.
func AllGather[T Element](c *Comm, in, out []T) error {
	return c.do1(base.OpAllGather, DTypeOf[T](), nil, 0, bytesOf(in), bytesOf(out), 1)
}

// Broadcast copies root's buf into every other rank's buf.
func Broadcast[T Element](c *Comm, buf []T, root int) error {
	b := bytesOf(buf)
	return c.do1(base.OpBroadcast, DTypeOf[T](), nil, root, b, b, 1)
}

// Barrier returns when every rank has called it.
func (c *Comm) Barrier() error {
	return c.do1(base.OpBarrier, 0, nil, 0, nil, nil, 0)
}

// AllGatherMany is AllGather of each ins[k] into outs[k] under one
// synchronisation: the results are those of one AllGather per buffer. The
// inputs together (each rounded up to 64 bytes) must fit the capacity.
func AllGatherMany[T Element](c *Comm, ins, outs [][]T) error {
	return doMany(c, base.OpAllGatherMany, ins, outs, nil)
}

// ReduceScatterMany is ReduceScatter of each ins[k] into outs[k] under one
// synchronisation, with the results of one ReduceScatter per buffer.
func ReduceScatterMany[T Element](c *Comm, ins, outs [][]T, op ...RedOp) error {
	return doMany(c, base.OpReduceScatterMany, ins, outs, op)
}

// Stage returns this rank's staging memory as n elements for the caller to
// write its all-reduce input into directly, saving the copy AllReduce
// makes. It waits until every peer has finished reading the staging from
// the previous call. The view is valid until the AllReduceStaged call that
// must follow (no other collective may come between them); writing it
// after that call starts is a data race with the peers.
func Stage[T Element](c *Comm, n int) ([]T, error) {
	if c.isClosed() {
		return nil, ErrClosed
	}
	if err := c.bounds.ValidateStage(n, DTypeOf[T](), false); err != nil {
		return nil, err
	}
	b, err := c.backend.Stage(n * DTypeOf[T]().Size())
	if err != nil {
		return nil, err
	}
	return typedOf[T](b), nil
}

// AllReduceStaged reduces the inputs that every rank wrote into its Stage
// view into out (len(out) elements, the count staged): the same bits as
// AllReduce of those inputs with op.
func AllReduceStaged[T Element](c *Comm, out []T, op ...RedOp) error {
	return c.do1(base.OpAllReduceStaged, DTypeOf[T](), op, 0, nil, bytesOf(out), 0)
}

// doMany runs a *Many request through the communicator's reusable
// request (see Comm.do1), converting the buffers into its reused slices.
func doMany[T Element](c *Comm, op base.Op, ins, outs [][]T, ops []RedOp) error {
	r := &c.reqs
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ins = appendBytesOf(r.ins[:0], ins)
	r.outs = appendBytesOf(r.outs[:0], outs)
	in, out := r.ins, r.outs
	// A nil list stays nil, as the caller passed it.
	if ins == nil {
		in = nil
	}
	if outs == nil {
		out = nil
	}
	red, scalar, err := redOf(ops, DTypeOf[T](), &r.scalar)
	if err != nil {
		return err
	}
	r.req = base.Request{Op: op, DType: DTypeOf[T](), Red: red, Scalar: scalar, In: in, Out: out}
	err = c.do(&r.req)
	clear(r.ins)
	clear(r.outs)
	r.req = base.Request{}
	return err
}

func appendBytesOf[T Element](dst [][]byte, s [][]T) [][]byte {
	for i := range s {
		dst = append(dst, bytesOf(s[i]))
	}
	return dst
}
