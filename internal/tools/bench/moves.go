package bench

import (
	"github.com/detcoll/detcoll/internal/backend/cuda"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// moves is what rank 0's kernels move for one call of op at s (Row's
// DetcollMoves), by the cuda backend's plan, its buffers in windows where
// registered says so.
func moves(op Op, s Shape, registered bool) (*report.Moves, error) {
	inLens, outLens := Parts(op, s)
	req := &base.DeviceRequest{Op: baseOp[op], DType: s.DType, Root: BroadcastRoot}
	addr := uint64(1 << 40) // the plan reads addresses only to tell a missing buffer
	for _, n := range inLens {
		req.In = append(req.In, base.DeviceBuf{Addr: addr, Len: n})
	}
	for _, n := range outLens {
		req.Out = append(req.Out, base.DeviceBuf{Addr: addr, Len: n})
	}
	t, err := cuda.CallTraffic(req, 0, s.World, registered)
	if err != nil {
		return nil, err
	}
	return &report.Moves{Path: t.Path, LocalRead: t.LocalRead, LocalWrite: t.LocalWrite, PeerRead: t.PeerRead, PeerWrite: t.PeerWrite}, nil
}

// baseOp is the protocol's operation of each of bench's.
var baseOp = map[Op]base.Op{
	AllReduce: base.OpAllReduce, ReduceScatter: base.OpReduceScatter, AllGather: base.OpAllGather,
	AllGatherMany: base.OpAllGatherMany, ReduceScatterMany: base.OpReduceScatterMany, Broadcast: base.OpBroadcast,
}
