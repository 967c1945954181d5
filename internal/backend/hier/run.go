package hier

import (
	"context"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// hostCall is the schedule's view of one buffer pair of a call with
// operator red: the same for host and device memory, but for the halving
// policy (see New).
func (c *Comm) hostCall(op base.Op, dt num.DType, red num.RedOp, bytes, root int, halving bool) proto.HostCall {
	return proto.HostCall{Op: op, Hosts: c.hosts, Host: c.host, PerHost: c.G, Local: c.g,
		Bytes: bytes, ElemSize: dt.Size(), Root: root, Halving: halving,
		LocalAlways: red == num.PreMulSum}
}

// scheduleBytes is the size HostCall wants of one buffer pair: the
// all-gather's input, every other collective's output.
func scheduleBytes(op base.Op, in, out int) int {
	if op == base.OpAllGather || op == base.OpAllGatherMany {
		return in
	}
	return out
}

// runHost runs the schedule of one buffer pair of req over host memory:
// in and out are the caller's (in, for a staged all-reduce, the staging).
func (c *Comm) runHost(ctx context.Context, req *base.Request, in, out []byte) error {
	dt := req.DType
	c.steps = proto.HostSchedule(c.steps[:0], c.hostCall(req.Op, dt, req.Red, scheduleBytes(req.Op, len(in), len(out)), req.Root, c.ex != nil))
	sizes, _ := proto.ScratchSizes(c.steps)
	mem := func(r proto.Ref) []byte {
		var b []byte
		switch r.Buf {
		case proto.BufIn:
			b = in
		case proto.BufOut:
			b = out
		default:
			b = c.buf(r.Buf, sizes[r.Buf])
		}
		return b[r.Off : r.Off+r.N]
	}
	for _, s := range c.steps {
		var err error
		switch s.Action {
		case proto.HostCopy:
			copy(mem(s.Dst), mem(s.Src))
		case proto.HostZero:
			clear(mem(s.Dst))
		case proto.LocalReduceScatter:
			err = c.local.Do(&base.Request{Op: base.OpReduceScatter, DType: dt, Red: c.hostRed, Scalar: c.scalar,
				In: [][]byte{mem(s.Src)}, Out: [][]byte{mem(s.Dst)}})
		case proto.LocalAllGather:
			err = c.local.Do(&base.Request{Op: base.OpAllGather, DType: dt, In: [][]byte{mem(s.Src)}, Out: [][]byte{mem(s.Dst)}})
		case proto.LocalBroadcast:
			buf := mem(s.Dst)
			err = c.local.Do(&base.Request{Op: base.OpBroadcast, DType: dt, Root: s.Root, In: [][]byte{buf}, Out: [][]byte{buf}})
		case proto.RailGather:
			err = c.railGather(ctx, mem(s.Src), mem(s.Dst))
		case proto.RailExchange:
			err = c.exchange(ctx, s.Peer, mem(s.Src), mem(s.Dst))
		case proto.Tree:
			c.srcs = c.srcs[:0]
			for _, r := range s.Srcs {
				c.srcs = append(c.srcs, mem(r))
			}
			c.reducer.Reduce(dt, c.node, mem(s.Dst), c.srcs)
		default:
			panic("hier: unknown step " + s.String())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// buf returns scratch buffer b with n bytes, 8-byte aligned.
func (c *Comm) buf(b proto.HostBuf, n int) []byte {
	if cap(c.scratch[b]) < n {
		c.scratch[b] = num.AlignedBytes(n)
	}
	return c.scratch[b][:n]
}
