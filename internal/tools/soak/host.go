package soak

import (
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// executor runs a batch's calls on one kind of memory. The loop in RunComm
// is the same for both: lay out a batch, start it, issue every call,
// finish, check every result.
type executor interface {
	// start makes the batch's arenas the calls' memory: the cpu backend
	// uses them as they are, cuda copies them to the device.
	start(b *batch) error
	// issue runs (cpu) or queues without waiting (cuda) one call.
	issue(b *batch, p *placed) error
	// finish waits for every issued call (cuda: synchronises the stream)
	// and leaves the results in the batch's host arenas.
	finish(b *batch) error
	// agree is a collective: it returns whether any rank passed true.
	agree(stop bool) (bool, error)
	// close frees what the executor holds; the communicator stays open.
	close()
}

// hostExec runs calls on host memory: the typed API on views of the
// arenas.
type hostExec struct {
	c    *detcoll.Comm
	flag []uint8 // agree's gather output
}

func (h *hostExec) start(*batch) error  { return nil }
func (h *hostExec) finish(*batch) error { return nil }
func (h *hostExec) close()              {}

func (h *hostExec) agree(stop bool) (bool, error) {
	var mine uint8
	if stop {
		mine = 1
	}
	h.flag = make([]uint8, h.c.WorldSize())
	if err := detcoll.AllGather(h.c, []uint8{mine}, h.flag); err != nil {
		return false, err
	}
	for _, f := range h.flag {
		if f != 0 {
			return true, nil
		}
	}
	return false, nil
}

func (h *hostExec) issue(b *batch, p *placed) error {
	c, dt := h.c, p.DType
	ins := func() [][]byte {
		var s [][]byte
		for k := range p.Counts {
			s = append(s, p.inBuf(b.in, k))
		}
		return s
	}
	outs := func() [][]byte {
		var s [][]byte
		for k := range p.Counts {
			s = append(s, p.outBuf(b.out, k))
		}
		return s
	}
	out := p.outBuf(b.out, 0)
	switch p.Op {
	case OpAllReduce:
		return check.Reduce(c, check.CallAllReduce, dt, check.RedOpOf(p.Red, b.rank), [][]byte{p.inBuf(b.in, 0)}, [][]byte{out})
	case OpAllReduceInPlace:
		return check.Reduce(c, check.CallAllReduce, dt, check.RedOpOf(p.Red, b.rank), [][]byte{out}, [][]byte{out})
	case OpAllReduceStaged:
		return check.Reduce(c, check.CallStaged, dt, check.RedOpOf(p.Red, b.rank), [][]byte{p.inBuf(b.in, 0)}, [][]byte{out})
	case OpReduceScatter:
		return check.Reduce(c, check.CallReduceScatter, dt, check.RedOpOf(p.Red, b.rank), [][]byte{p.inBuf(b.in, 0)}, [][]byte{out})
	case OpReduceScatterMany:
		return check.Reduce(c, check.CallReduceScatterMany, dt, check.RedOpOf(p.Red, b.rank), ins(), outs())
	case OpAllGather:
		return gather(c, dt, p.Op, 0, ins(), outs())
	case OpAllGatherInPlace:
		n := p.Counts[0] * dt.Size()
		return gather(c, dt, p.Op, 0, [][]byte{out[b.rank*n : (b.rank+1)*n]}, outs())
	case OpAllGatherMany:
		return gather(c, dt, p.Op, 0, ins(), outs())
	case OpBroadcast:
		return gather(c, dt, p.Op, p.Root, nil, outs())
	}
	return fmt.Errorf("soak: no host form of %v", p.Op)
}

// gather runs a gather or broadcast as the Go type of dt, so that the
// signature carries the drawn element type.
func gather(c *detcoll.Comm, dt detcoll.DType, op Op, root int, ins, outs [][]byte) error {
	switch dt {
	case detcoll.TypeInt8:
		return gatherAs[int8](c, op, root, ins, outs)
	case detcoll.TypeUint8:
		return gatherAs[uint8](c, op, root, ins, outs)
	case detcoll.TypeInt16:
		return gatherAs[int16](c, op, root, ins, outs)
	case detcoll.TypeUint16:
		return gatherAs[uint16](c, op, root, ins, outs)
	case detcoll.TypeInt32:
		return gatherAs[int32](c, op, root, ins, outs)
	case detcoll.TypeUint32:
		return gatherAs[uint32](c, op, root, ins, outs)
	case detcoll.TypeInt64:
		return gatherAs[int64](c, op, root, ins, outs)
	case detcoll.TypeUint64:
		return gatherAs[uint64](c, op, root, ins, outs)
	case detcoll.TypeBFloat16:
		return gatherAs[detcoll.BFloat16](c, op, root, ins, outs)
	case detcoll.TypeFloat16:
		return gatherAs[detcoll.Float16](c, op, root, ins, outs)
	case detcoll.TypeFloat32:
		return gatherAs[float32](c, op, root, ins, outs)
	case detcoll.TypeFloat64:
		return gatherAs[float64](c, op, root, ins, outs)
	}
	return fmt.Errorf("soak: no element type %v", dt)
}

func gatherAs[T detcoll.Element](c *detcoll.Comm, op Op, root int, ins, outs [][]byte) error {
	switch op {
	case OpAllGather, OpAllGatherInPlace:
		return detcoll.AllGather(c, check.Typed[T](ins[0]), check.Typed[T](outs[0]))
	case OpAllGatherMany:
		return detcoll.AllGatherMany(c, check.TypedEach[T](ins), check.TypedEach[T](outs))
	case OpBroadcast:
		return detcoll.Broadcast(c, check.Typed[T](outs[0]), root)
	}
	return fmt.Errorf("soak: %v is not a gather", op)
}
