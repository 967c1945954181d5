package detcoll_test

import (
	"context"
	"testing"

	"github.com/detcoll/detcoll"
)

// TestCallsDoNotAllocate guards the per-call path: a host collective on the
// cpu backend allocates nothing in the steady state (the *Many calls keep
// two small allocations in the validation of their buffer lists).
func TestCallsDoNotAllocate(t *testing.T) {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: 1, Capacity: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	in, out := make([]float32, 256), make([]float32, 256)
	bf := make([]detcoll.BFloat16, 256)
	ins, outs := [][]float32{in[:128], in[128:]}, [][]float32{out[:128], out[128:]}
	for _, tc := range []struct {
		name string
		max  float64
		call func() error
	}{
		{"AllReduce", 0, func() error { return detcoll.AllReduce(c, in, out) }},
		{"AllReduce/bfloat16/inplace", 0, func() error { return detcoll.AllReduce(c, bf, bf) }},
		{"ReduceScatter", 0, func() error { return detcoll.ReduceScatter(c, in, out) }},
		{"AllGather", 0, func() error { return detcoll.AllGather(c, in, out) }},
		{"Broadcast", 0, func() error { return detcoll.Broadcast(c, in, 0) }},
		{"Barrier", 0, c.Barrier},
		{"AllGatherMany", 2, func() error { return detcoll.AllGatherMany(c, ins, outs) }},
		{"AllReduce/max", 0, func() error { return detcoll.AllReduce(c, in, out, detcoll.Max) }},
		{"AllReduce/avg", 0, func() error { return detcoll.AllReduce(c, in, out, detcoll.Avg) }},
		{"AllReduce/premulsum", 0, func() error { return detcoll.AllReduce(c, in, out, detcoll.PreMulSum(0.5)) }},
	} {
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := testing.AllocsPerRun(50, func() { tc.call() }); got > tc.max {
			t.Errorf("%s: %v allocations per call, want at most %v", tc.name, got, tc.max)
		}
	}
}
