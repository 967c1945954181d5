package cuda

import (
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// Traffic is the data one rank's kernels move for one call, in bytes, as
// its plan has them: reads and writes of this GPU's memory (local) and of
// the peers' (peer: over NVLink between GPUs; through this GPU's memory
// when ranks share one). It counts the payload only: LL lines as the 16
// bytes that carry 8 of data, and no control words, signatures or LL
// headers (a few hundred bytes a call).
type Traffic struct {
	Path       string `json:"path"` // proto.Path's name: ll, push, one-shot, ...
	LocalRead  int64  `json:"local_read"`
	LocalWrite int64  `json:"local_write"`
	PeerRead   int64  `json:"peer_read"`
	PeerWrite  int64  `json:"peer_write"`
}

// CallTraffic is the Traffic of req at rank of world, planned with the
// default thresholds and the DETCOLL_CUDA_* knobs of the environment, as
// Open plans it, its buffers in windows where registered says so: what
// detcoll bench reports per row.
func CallTraffic(req *base.DeviceRequest, rank, world int, registered bool) (Traffic, error) {
	p, err := newPlanner(rank, world)
	if err != nil {
		return Traffic{}, err
	}
	return p.traffic(req, registered), nil
}

// traffic is the Traffic of req by the path plan gives it. Per buffer of
// n input bytes (the whole input of a reduce-scatter), W ranks, s = n/W
// (a shard, a part, a reduce-scatter's output) and e = s(W-1) (the
// peers' shards together), an all-reduce moves:
//
//	path       local read   local write  peer read  peer write
//	alone      n            n            0          0
//	ll         n + 2n(W-1)  n            0          2n(W-1)
//	one-shot   2n           2n           n(W-1)     0
//	two-phase  n + 2s       2n + s       2e         0
//	push       2n + e       2s + e       0          2e
//	registered s            s            e          e
//
// and a reduce-scatter (n its whole input, s its output) on the
// push-scatter path 2n, 2s, 0, e, on the registered path s, s, e, 0: its
// own part of its own input and of each peer's read where it lies, the
// sums written into its own output only. llTraffic and oneShot have the
// other operations. registered says the buffers lie in windows, aligned
// (planner.registration without the addresses: the call's shape must
// still allow it, planner.registrable).
func (p planner) traffic(req *base.DeviceRequest, registered bool) Traffic {
	sizes := req.InputSizes()
	_, total := base.StagingLayout(sizes)
	path := p.path(req, len(sizes), total, registered && p.registrable(req))
	t := Traffic{Path: path.String()}
	w := int64(p.world)
	for _, size := range sizes {
		n := int64(size)
		s, e := n/w, n/w*(w-1)
		switch path {
		case proto.Alone:
			t.add(n, outBytes(req.Op, n, w, p.rank == int(req.Root)), 0, 0)
		case proto.LL:
			t.llTraffic(req.Op, n, w, p.rank == int(req.Root))
		case proto.OneShot:
			t.oneShot(req.Op, n, w, p.rank == int(req.Root), req.Op == base.OpAllReduceStaged)
		case proto.TwoPhase:
			// Copy in (none when staged), reduce the shard in place from
			// every staging, gather the W shards.
			copyIn := n
			if req.Op == base.OpAllReduceStaged {
				copyIn = 0
			}
			t.add(copyIn+2*s, copyIn+s+n, 0, 0)
			t.PeerRead += e + e
		case proto.Push:
			// PUSH: read the input, write part p to rank p. RPUSH: read
			// the W parts here, write the sums here and to every peer.
			// GPUSHED: copy the W-1 peers' sums into the output.
			t.add(n+n+e, s+s+e, 0, e+e)
		case proto.PushScatter:
			t.add(n+n, s+s, 0, e)
		case proto.Registered:
			// Read this rank's part of every rank's input, write the sums
			// into every rank's output (a reduce-scatter: its own).
			if kindOf(req.Op) == kindReduceScatter {
				t.add(s, s, e, 0)
			} else {
				t.add(s, s, e, e)
			}
		}
	}
	return t
}

func (t *Traffic) add(lr, lw, pr, pw int64) {
	t.LocalRead += lr
	t.LocalWrite += lw
	t.PeerRead += pr
	t.PeerWrite += pw
}

// outBytes is the output of a call of n input bytes per rank.
func outBytes(op base.Op, n, w int64, root bool) int64 {
	switch op {
	case base.OpReduceScatter, base.OpReduceScatterMany:
		return n / w
	case base.OpAllGather, base.OpAllGatherMany:
		return n * w
	case base.OpBroadcast:
		if root {
			return 0 // in place at the root
		}
	}
	return n
}

// llTraffic adds one buffer of an LL call: each rank sends what each
// peer needs as 16-byte lines carrying 8 bytes (written there, read there
// by the peer), reads its own input and writes its output.
func (t *Traffic) llTraffic(op base.Op, n, w int64, root bool) {
	sent, recv := n*(w-1), n*(w-1) // all-reduce, all-gather: all of it, to and from each peer
	switch op {
	case base.OpReduceScatter, base.OpReduceScatterMany:
		sent, recv = n/w*(w-1), n/w*(w-1)
	case base.OpBroadcast:
		sent, recv = 0, n
		if root {
			sent, recv = n*(w-1), 0
		}
	}
	in := n
	if op == base.OpBroadcast && !root {
		in = 0
	}
	t.add(in+2*recv, outBytes(op, n, w, root), 0, 2*sent)
}

// oneShot adds one buffer of the staging path: copy the input into the
// staging (none when staged, or off the broadcast's root), then compute
// the output from every rank's staging.
func (t *Traffic) oneShot(op base.Op, n, w int64, root, staged bool) {
	copyIn := n
	if staged || (op == base.OpBroadcast && !root) {
		copyIn = 0
	}
	own, peers := n, n*(w-1) // what the compute reads of this staging and the peers'
	switch op {
	case base.OpReduceScatter, base.OpReduceScatterMany:
		own, peers = n/w, n/w*(w-1)
	case base.OpBroadcast:
		own, peers = 0, n
		if root {
			peers = 0
		}
	}
	t.add(copyIn+own, copyIn+outBytes(op, n, w, root), peers, 0)
}
