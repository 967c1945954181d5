package bench

import (
	"slices"
	"testing"

	"github.com/detcoll/detcoll/internal/core/num"
)

func TestParts(t *testing.T) {
	s := Shape{DType: num.Float32Type, Bytes: 4 * 30, World: 3}
	for _, tt := range []struct {
		op        Op
		ins, outs []int
	}{
		{AllReduce, []int{120}, []int{120}},
		{ReduceScatter, []int{120}, []int{40}},
		{AllGather, []int{120}, []int{360}},
		{Broadcast, []int{120}, []int{120}},
		{AllGatherMany, []int{60, 60}, []int{180, 180}},
		// 30 elements = 10 per rank: 5 and 5 per rank.
		{ReduceScatterMany, []int{60, 60}, []int{20, 20}},
	} {
		ins, outs := Parts(tt.op, s)
		if !slices.Equal(ins, tt.ins) || !slices.Equal(outs, tt.outs) {
			t.Errorf("Parts(%s) = %v, %v; want %v, %v", tt.op, ins, outs, tt.ins, tt.outs)
		}
	}
	// Odd counts: the second buffer takes the rest.
	s = Shape{DType: num.BFloat16Type, Bytes: 2 * 21, World: 3}
	if ins, outs := Parts(AllGatherMany, s); !slices.Equal(ins, []int{20, 22}) || !slices.Equal(outs, []int{60, 66}) {
		t.Errorf("Parts(all_gather_many, 21 bfloat16) = %v, %v", ins, outs)
	}
	if ins, outs := Parts(ReduceScatterMany, s); !slices.Equal(ins, []int{18, 24}) || !slices.Equal(outs, []int{6, 8}) {
		t.Errorf("Parts(reduce_scatter_many, 21 bfloat16) = %v, %v", ins, outs)
	}
}

func TestBenchName(t *testing.T) {
	for op, want := range map[Op]string{AllReduce: "AllReduce", AllGatherMany: "AllGatherMany", Broadcast: "Broadcast"} {
		if got := op.BenchName(); got != want {
			t.Errorf("%s.BenchName() = %q; want %q", op, got, want)
		}
	}
}

func TestInput(t *testing.T) {
	for _, dt := range []num.DType{num.BFloat16Type, num.Float16Type, num.Float32Type, num.Float64Type} {
		a := Input(dt, 1000, 7, 0, 3)
		if len(a) != 1000*dt.Size() {
			t.Fatalf("Input(%v, 1000) has %d bytes", dt, len(a))
		}
		if !slices.Equal(a, Input(dt, 1000, 7, 0, 3)) {
			t.Errorf("Input(%v) differs between calls", dt)
		}
		if slices.Equal(a, Input(dt, 1000, 7, 1, 3)) || slices.Equal(a, Input(dt, 1000, 7, 0, 4)) {
			t.Errorf("Input(%v) is the same for another rank or row", dt)
		}
		size := dt.Size()
		for i := 0; i < len(a); i += size {
			var v float64
			switch dt {
			case num.BFloat16Type:
				v = num.AsBFloat16s(a[i : i+2])[0].Float64()
			case num.Float16Type:
				v = num.AsFloat16s(a[i : i+2])[0].Float64()
			case num.Float32Type:
				v = float64(num.AsFloat32s(a[i : i+4])[0])
			default:
				v = num.AsFloat64s(a[i : i+8])[0]
			}
			if !(v >= 1 && v <= 2) {
				t.Fatalf("Input(%v) element %d = %v; want in [1, 2]", dt, i/size, v)
			}
		}
	}
}
