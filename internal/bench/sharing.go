package bench

import (
	"os"
	"path/filepath"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/base"
	"github.com/detcoll/detcoll/internal/cuda"
	"github.com/detcoll/detcoll/internal/devmem"
	"github.com/detcoll/detcoll/internal/report"
)

// shareGPUs finds out, with every rank of host, whether ranks share GPUs
// and how (MPS, mpsRunning, or time-sliced). Every rank must call it; they
// all get the same answer.
func (d *CUDA) shareGPUs(host *detcoll.Comm) error {
	_, most, err := devmem.GPUsOf(host, d.g.gpu)
	if err != nil {
		return err
	}
	d.perGPU = most
	if most > 1 {
		d.sharing = report.SharingTimeSliced
		if mpsRunning() {
			d.sharing = report.SharingMPS
		}
	}
	return nil
}

// mpsRunning reports whether an MPS control daemon listens where this
// process's CUDA looks for one (CUDA_MPS_PIPE_DIRECTORY, /tmp/nvidia-mps
// by default): then the driver made this process an MPS client, and the
// kernels of ranks sharing a GPU run at once. The driver API does not
// say so itself.
func mpsRunning() bool {
	dir := os.Getenv("CUDA_MPS_PIPE_DIRECTORY")
	if dir == "" {
		dir = "/tmp/nvidia-mps"
	}
	fi, err := os.Stat(filepath.Join(dir, "control"))
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// moves is what rank 0's kernels move for one call of op at s (Row's
// DetcollMoves), by the cuda backend's plan.
func moves(op Op, s Shape) (*report.Moves, error) {
	inLens, outLens := Parts(op, s)
	req := &base.DeviceRequest{Op: baseOp[op], DType: s.DType, Root: BroadcastRoot}
	addr := uint64(1 << 40) // the plan reads addresses only to tell a missing buffer
	for _, n := range inLens {
		req.In = append(req.In, base.DeviceBuf{Addr: addr, Len: n})
	}
	for _, n := range outLens {
		req.Out = append(req.Out, base.DeviceBuf{Addr: addr, Len: n})
	}
	t, err := cuda.CallTraffic(req, 0, s.World)
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
