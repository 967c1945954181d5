package cuda

import (
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
)

// TestTraffic checks the plan's byte counts against ones worked out by
// hand from the kernels (ll.h, staging.h, push.h), one case per path.
func TestTraffic(t *testing.T) {
	const M = 1 << 20
	req := func(op base.Op, in, out int, root int) *base.DeviceRequest {
		return &base.DeviceRequest{Op: op, DType: num.Float32Type, Root: root, In: buf(1<<40, in), Out: buf(1<<42, out)}
	}
	for _, tc := range []struct {
		name        string
		rank, world int
		req         *base.DeviceRequest
		registered  bool
		want        Traffic
	}{
		// 1 KiB in; 2 KiB of lines (16 bytes per 8) to the peer and from it.
		{"ll all-reduce", 0, 2, req(base.OpAllReduce, 1024, 1024, 0), false, Traffic{"ll", 1024 + 2048, 1024, 0, 2048}},
		// Each of 3 peers gets its 1 KiB share as 2 KiB of lines.
		{"ll reduce-scatter", 1, 4, req(base.OpReduceScatter, 4096, 1024, 0), false, Traffic{"ll", 4096 + 3*2048, 1024, 0, 3 * 2048}},
		// The root sends 1 KiB to each of 2 peers; a peer only receives.
		{"ll broadcast root", 1, 3, req(base.OpBroadcast, 1024, 1024, 1), false, Traffic{"ll", 1024, 0, 0, 2 * 2048}},
		{"ll broadcast peer", 0, 3, req(base.OpBroadcast, 1024, 1024, 1), false, Traffic{"ll", 2048, 1024, 0, 0}},
		// Input and staging read, staging and output written, 1 MiB from the peer's staging.
		{"one-shot all-gather", 0, 2, req(base.OpAllGather, M, 2*M, 0), false, Traffic{"one-shot", 2 * M, M + 2*M, M, 0}},
		{"one-shot broadcast peer", 0, 3, req(base.OpBroadcast, M, M, 1), false, Traffic{"one-shot", 0, M, M, 0}},
		// Push: input read, half kept, half pushed; the 2 halves summed
		// here, the sums kept and pushed; the peer's sums copied out.
		{"push all-reduce", 0, 2, req(base.OpAllReduce, M, M, 0), false, Traffic{"push", 2*M + M/2, M + M/2, 0, M}},
		{"push-scatter reduce-scatter", 1, 2, req(base.OpReduceScatter, M, M/2, 0), false, Traffic{"push-scatter", 2 * M, M, 0, M / 2}},
		// Staged: no copy-in; the own shard read twice (sum, gather), the
		// peer's twice over the link; the shard summed in place, the output written.
		{"two-phase staged", 0, 2, &base.DeviceRequest{Op: base.OpAllReduceStaged, DType: num.Float32Type, Out: buf(1<<42, M)},
			false, Traffic{"two-phase", M, M/2 + M, M, 0}},
		{"alone", 0, 1, req(base.OpAllReduce, M, M, 0), false, Traffic{"alone", M, M, 0, 0}},
		{"alone all-gather", 0, 1, req(base.OpAllGather, M, M, 0), false, Traffic{"alone", M, M, 0, 0}},
		// Registered: this rank's quarter of its own input and of each
		// of 3 peers' read in place, the sums written here and to each.
		{"registered all-reduce", 1, 4, req(base.OpAllReduce, 4*M, 4*M, 0), true, Traffic{"registered", M, M, 3 * M, 3 * M}},
		// Below the LL threshold a registered call is an LL call.
		{"registered small", 0, 2, req(base.OpAllReduce, 1024, 1024, 0), true, Traffic{"ll", 1024 + 2048, 1024, 0, 2048}},
		// A registered reduce-scatter: its half of its own input and of
		// the peer's read in place, the sums into its own output only.
		{"registered reduce-scatter", 1, 2, req(base.OpReduceScatter, M, M/2, 0), true, Traffic{"registered", M / 2, M / 2, M / 2, 0}},
		// W=4, 4 MiB in, 1 MiB out: its quarter of its input (1 MiB) and
		// of each of 3 peers' (3 MiB) read, 1 MiB written here.
		{"registered reduce-scatter W=4", 2, 4, req(base.OpReduceScatter, 4*M, M, 0), true, Traffic{"registered", M, M, 3 * M, 0}},
		// An output of M+8 bytes is no whole number of vectors: the push
		// path, 2n read, 2s written, the 3 peers' parts pushed.
		{"registered reduce-scatter, odd part", 0, 4, req(base.OpReduceScatter, 4*M+32, M+8, 0), true,
			Traffic{"push-scatter", 2 * (4*M + 32), 2 * (M + 8), 0, 3 * (M + 8)}},
		{"registered reduce-scatter, small", 0, 2, req(base.OpReduceScatter, 4096, 2048, 0), true, Traffic{"ll", 4096 + 2*2048, 2048, 0, 2 * 2048}},
		// An all-gather in windows stays on the staging path.
		{"registered all-gather", 0, 2, req(base.OpAllGather, M, 2*M, 0), true, Traffic{"one-shot", 2 * M, M + 2*M, M, 0}},
	} {
		if got := testPlanner(tc.rank, tc.world).traffic(tc.req, tc.registered); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestTrafficSumsBuffers: a call of several buffers moves what each would
// alone.
func TestTrafficSumsBuffers(t *testing.T) {
	p := testPlanner(0, 2)
	one := &base.DeviceRequest{Op: base.OpAllGatherMany, DType: num.Float32Type, In: buf(1<<40, 1000), Out: buf(1<<42, 2000)}
	two := &base.DeviceRequest{Op: base.OpAllGatherMany, DType: num.Float32Type,
		In: append(buf(1<<40, 1000), buf(1<<41, 1000)...), Out: append(buf(1<<42, 2000), buf(1<<43, 2000)...)}
	a, b := p.traffic(one, false), p.traffic(two, false)
	if b.LocalRead != 2*a.LocalRead || b.LocalWrite != 2*a.LocalWrite || b.PeerWrite != 2*a.PeerWrite || b.Path != a.Path {
		t.Errorf("one buffer %+v, two %+v", a, b)
	}
}
