package detcoll_test

import (
	"context"
	"math"
	"testing"

	"github.com/detcoll/detcoll"
)

// TestOneRankNaNsAreCanonical: at W=1 a reduction is a copy, but every NaN
// result is still the canonical NaN of its type (doc.go), as at any W: a
// payload or a sign on an input NaN must not survive, whichever call path.
func TestOneRankNaNsAreCanonical(t *testing.T) {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	t.Run("bfloat16", func(t *testing.T) {
		in := []detcoll.BFloat16{0x7fc2, 0xffc1, 0x7f81, 0x3f80, 0x7f80, 0xff80, 0x8000}
		want := []detcoll.BFloat16{0x7fff, 0x7fff, 0x7fff, 0x3f80, 0x7f80, 0xff80, 0x8000}
		checkCanonical(t, c, in, want)
	})
	t.Run("float16", func(t *testing.T) {
		in := []detcoll.Float16{0x7e01, 0xfc01, 0x7c00, 0x3c00, 0x8000}
		want := []detcoll.Float16{0x7fff, 0x7fff, 0x7c00, 0x3c00, 0x8000}
		checkCanonical(t, c, in, want)
	})
	t.Run("float32", func(t *testing.T) {
		in := []float32{math.Float32frombits(0x7fc00001), math.Float32frombits(0xff800001), 1, float32(math.Inf(-1)), math.Float32frombits(0x80000000)}
		want := []float32{math.Float32frombits(0x7fffffff), math.Float32frombits(0x7fffffff), 1, float32(math.Inf(-1)), math.Float32frombits(0x80000000)}
		checkCanonical(t, c, in, want)
	})
	t.Run("float64", func(t *testing.T) {
		in := []float64{math.Float64frombits(0x7ff8000000000001), math.Float64frombits(0xfff0000000000001), 2, math.Float64frombits(0x8000000000000000)}
		want := []float64{math.Float64frombits(0x7fffffffffffffff), math.Float64frombits(0x7fffffffffffffff), 2, math.Float64frombits(0x8000000000000000)}
		checkCanonical(t, c, in, want)
	})
}

func checkCanonical[T detcoll.Float](t *testing.T, c *detcoll.Comm, in, want []T) {
	t.Helper()
	check := func(what string, got []T) {
		t.Helper()
		if g, w := rawBytes(got), rawBytes(want); string(g) != string(w) {
			t.Errorf("%s: got % x; want % x (input % x)", what, g, w, rawBytes(in))
		}
	}
	out := make([]T, len(in))
	if err := detcoll.AllReduce(c, in, out); err != nil {
		t.Fatal(err)
	}
	check("AllReduce", out)
	inPlace := append([]T(nil), in...)
	if err := detcoll.AllReduce(c, inPlace, inPlace); err != nil {
		t.Fatal(err)
	}
	check("AllReduce in place", inPlace)
	rs := make([]T, len(in))
	if err := detcoll.ReduceScatter(c, in, rs); err != nil {
		t.Fatal(err)
	}
	check("ReduceScatter", rs)
	view, err := detcoll.Stage[T](c, len(in))
	if err != nil {
		t.Fatal(err)
	}
	copy(view, in)
	staged := make([]T, len(in))
	if err := detcoll.AllReduceStaged(c, staged); err != nil {
		t.Fatal(err)
	}
	check("AllReduceStaged", staged)
}
