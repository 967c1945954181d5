package detcoll

import (
	"math"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
)

// DevicePtr is a device address on the communicator's GPU (a CUdeviceptr,
// such as torch's data_ptr() or what cuMemAlloc returns).
type DevicePtr uint64

// Stream is a CUDA stream of the communicator's device (a CUstream); 0 is
// the legacy default stream.
type Stream uintptr

// deviceBackend is what a backend implements for device-memory calls.
type deviceBackend interface {
	Enqueue(req *base.DeviceRequest) error
	StageDevice(n int, s uintptr) (uint64, error)
	Synchronize(s uintptr) error
	Device() int
}

// The device calls follow NCCL: each queues its work on stream s and
// returns at once, without waiting for the GPU or the peers. Every rank
// queues the same calls in the same order, and all calls of one
// communicator go to one stream (or to streams the caller orders with
// events), since consecutive calls use the same staging memory. Calls may
// be captured into CUDA graphs; replays and eager calls mix freely.
//
// Bad arguments are refused with ErrInvalid before anything is queued,
// under the rules of the host calls (counts, multiples of the world size,
// overlap, capacity, root); in addition the buffers of a reduction must be
// aligned to their element size. A device call on a cpu communicator, or a
// host call on a cuda one, is ErrInvalid too.
//
// Failures that happen on the GPU (a timeout, a mismatch, a lost peer, an
// abort) are recorded by the kernels and returned by the next call, by
// Synchronize and by Err; the communicator is then poisoned, as with the
// host calls.

// AllReduceDevice reduces count elements of dt at in over all ranks into
// out with the fixed tree, the same bits as AllReduce: a sum unless given
// another operator (op: at most one). out may be in.
func (c *Comm) AllReduceDevice(in, out DevicePtr, count int, dt DType, s Stream, op ...RedOp) error {
	b, err := deviceBytes(base.OpAllReduce, count, dt, 1)
	if err != nil {
		return err
	}
	req := &base.DeviceRequest{Op: base.OpAllReduce, DType: dt, Stream: uintptr(s),
		In: []base.DeviceBuf{{Addr: uint64(in), Len: b}}, Out: []base.DeviceBuf{{Addr: uint64(out), Len: b}}}
	if err := deviceRed(req, op); err != nil {
		return err
	}
	return c.doDevice(req)
}

// deviceRed sets req's operator from ops as redOf does, the scalar in
// memory of its own, allocated only for PreMulSum, so that the other
// calls allocate nothing; a PreMulSumDevice scalar stays where it is.
func deviceRed(req *base.DeviceRequest, ops []RedOp) error {
	var err error
	switch {
	case len(ops) == 0:
		req.Red = num.Sum
	case len(ops) == 1 && ops[0].op != num.PreMulSum:
		req.Red = ops[0].op
	case len(ops) == 1 && ops[0].device:
		if ops[0].at == 0 {
			return base.Invalidf("PreMulSumDevice: a device scalar at address 0")
		}
		req.Red, req.ScalarAt = num.PreMulSum, uint64(ops[0].at)
	default:
		req.Red, req.Scalar, err = redOf(ops, req.DType, new([8]byte))
	}
	return err
}

// ReduceScatterDevice sums WorldSize*recvCount elements of dt at in over
// all ranks and writes this rank's recvCount elements of the sum to out,
// as ReduceScatter. in and out must not overlap.
func (c *Comm) ReduceScatterDevice(in, out DevicePtr, recvCount int, dt DType, s Stream, op ...RedOp) error {
	b, err := deviceBytes(base.OpReduceScatter, recvCount, dt, c.WorldSize())
	if err != nil {
		return err
	}
	req := &base.DeviceRequest{Op: base.OpReduceScatter, DType: dt, Stream: uintptr(s),
		In:  []base.DeviceBuf{{Addr: uint64(in), Len: b}},
		Out: []base.DeviceBuf{{Addr: uint64(out), Len: b / c.WorldSize()}}}
	if err := deviceRed(req, op); err != nil {
		return err
	}
	return c.doDevice(req)
}

// AllGatherDevice concatenates every rank's sendCount elements at in into
// out (WorldSize*sendCount elements), in rank order, byte for byte. in may
// be out's own slot.
func (c *Comm) AllGatherDevice(in, out DevicePtr, sendCount int, dt DType, s Stream) error {
	b, err := deviceBytes(base.OpAllGather, sendCount, dt, c.WorldSize())
	if err != nil {
		return err
	}
	return c.doDevice(&base.DeviceRequest{Op: base.OpAllGather, DType: dt, Stream: uintptr(s),
		In:  []base.DeviceBuf{{Addr: uint64(in), Len: b / c.WorldSize()}},
		Out: []base.DeviceBuf{{Addr: uint64(out), Len: b}}})
}

// BroadcastDevice copies root's count elements at buf into every other
// rank's buf.
func (c *Comm) BroadcastDevice(buf DevicePtr, count int, dt DType, root int, s Stream) error {
	b, err := deviceBytes(base.OpBroadcast, count, dt, 1)
	if err != nil {
		return err
	}
	d := []base.DeviceBuf{{Addr: uint64(buf), Len: b}}
	return c.doDevice(&base.DeviceRequest{Op: base.OpBroadcast, DType: dt, Root: root, Stream: uintptr(s), In: d, Out: d})
}

// AllGatherManyDevice is AllGatherDevice of each ins[k] (sendCounts[k]
// elements) into outs[k] under one synchronisation, with the results of one
// call per buffer. The inputs together, each rounded up to 64 bytes, must
// fit the capacity.
func (c *Comm) AllGatherManyDevice(ins, outs []DevicePtr, sendCounts []int, dt DType, s Stream) error {
	req, err := manyRequest(base.OpAllGatherMany, ins, outs, sendCounts, dt, 1, c.WorldSize())
	if err != nil {
		return err
	}
	req.Stream = uintptr(s)
	return c.doDevice(req)
}

// ReduceScatterManyDevice is ReduceScatterDevice of each ins[k] into
// outs[k] (recvCounts[k] elements) under one synchronisation, with the
// results of one call per buffer.
func (c *Comm) ReduceScatterManyDevice(ins, outs []DevicePtr, recvCounts []int, dt DType, s Stream, op ...RedOp) error {
	req, err := manyRequest(base.OpReduceScatterMany, ins, outs, recvCounts, dt, c.WorldSize(), 1)
	if err != nil {
		return err
	}
	if err := deviceRed(req, op); err != nil {
		return err
	}
	req.Stream = uintptr(s)
	return c.doDevice(req)
}

// StageDevice returns the address of this rank's staging memory for the
// caller to write count elements of its all-reduce input into, saving the
// copy AllReduceDevice makes. It queues on s a wait until every peer has
// finished reading the staging from the previous call: write the input on
// s (or after it) and call AllReduceStagedDevice next, with no other
// collective between them.
func (c *Comm) StageDevice(count int, dt DType, s Stream) (DevicePtr, error) {
	if c.isClosed() {
		return 0, ErrClosed
	}
	if c.device == nil {
		return 0, c.notDevice(base.OpAllReduceStaged)
	}
	if err := c.bounds.ValidateStage(count, dt, true); err != nil {
		return 0, err
	}
	p, err := c.device.StageDevice(count*dt.Size(), uintptr(s))
	return DevicePtr(p), err
}

// AllReduceStagedDevice sums the inputs that every rank wrote into its
// StageDevice memory into out (count elements, the count staged): the same
// bits as AllReduceDevice of those inputs. out must not be the staging.
func (c *Comm) AllReduceStagedDevice(out DevicePtr, count int, dt DType, s Stream, op ...RedOp) error {
	b, err := deviceBytes(base.OpAllReduceStaged, count, dt, 1)
	if err != nil {
		return err
	}
	req := &base.DeviceRequest{Op: base.OpAllReduceStaged, DType: dt, Stream: uintptr(s),
		Out: []base.DeviceBuf{{Addr: uint64(out), Len: b}}}
	if err := deviceRed(req, op); err != nil {
		return err
	}
	return c.doDevice(req)
}

// Synchronize waits until the work queued on s is done, then returns the
// communicator's failure, if any: the way to learn, at a point of the
// caller's choosing, whether the device calls queued so far succeeded. A
// call that failed on the GPU left its outputs unspecified.
func (c *Comm) Synchronize(s Stream) error {
	if c.isClosed() {
		return ErrClosed
	}
	if c.device == nil {
		return base.Invalidf("Synchronize on a %s communicator: device calls need Backend \"cuda\"", c.opts.Backend)
	}
	return c.device.Synchronize(uintptr(s))
}

// Device returns the CUDA device ordinal this rank runs on, or -1 for a
// communicator without a device.
func (c *Comm) Device() int {
	if c.device == nil {
		return -1
	}
	return c.device.Device()
}

// doDevice validates a device request and queues it.
func (c *Comm) doDevice(req *base.DeviceRequest) error {
	if c.isClosed() {
		return ErrClosed
	}
	if c.device == nil {
		return c.notDevice(req.Op)
	}
	// A failed communicator reports its cause first, as host calls do.
	if err := c.backend.Err(); err != nil {
		return err
	}
	if err := c.bounds.ValidateDevice(req); err != nil {
		return err
	}
	return c.device.Enqueue(req)
}

func (c *Comm) notDevice(op Op) error {
	return base.Invalidf("%vDevice on a %s communicator: device calls need Backend \"cuda\"", op, c.opts.Backend)
}

// deviceBytes returns the bytes of count elements of dt times mult,
// refusing negative counts and sizes that overflow.
func deviceBytes(op Op, count int, dt DType, mult int) (int, error) {
	if count < 0 {
		return 0, base.Invalidf("%v: negative count %d", op, count)
	}
	size := max(dt.Size(), 1) // an invalid type is refused by validation
	if count > math.MaxInt/size/mult {
		return 0, base.Invalidf("%v: %d elements of %v overflow", op, count, dt)
	}
	return count * size * mult, nil
}

// manyRequest builds a *Many request: ins[k] holds counts[k]*inMult
// elements, outs[k] counts[k]*outMult.
func manyRequest(op Op, ins, outs []DevicePtr, counts []int, dt DType, inMult, outMult int) (*base.DeviceRequest, error) {
	if len(ins) != len(counts) || len(outs) != len(counts) {
		return nil, base.Invalidf("%v: %d inputs, %d outputs and %d counts", op, len(ins), len(outs), len(counts))
	}
	req := &base.DeviceRequest{Op: op, DType: dt}
	for k, n := range counts {
		bi, err := deviceBytes(op, n, dt, inMult)
		if err != nil {
			return nil, err
		}
		bo, err := deviceBytes(op, n, dt, outMult)
		if err != nil {
			return nil, err
		}
		req.In = append(req.In, base.DeviceBuf{Addr: uint64(ins[k]), Len: bi})
		req.Out = append(req.Out, base.DeviceBuf{Addr: uint64(outs[k]), Len: bo})
	}
	return req, nil
}
