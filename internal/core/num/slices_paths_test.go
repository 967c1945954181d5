package num

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detcoll/detcoll/internal/testkit/testseed"
)

// A pathKernel is one code path of a type's slice add: the exported kernel,
// which on amd64 takes whole vector blocks before the Go loop, or the Go loop
// alone, which is all that other CPUs and purego builds run.
type pathKernel[T any] struct {
	name string
	f    func(dst, a, b []T)
}

// wildBits returns a bit pattern of c's width that is, with equal odds, a
// NaN (any payload, either sign), ±Inf, a subnormal, ±0, one of c's
// specials, or one of randBits' patterns.
func wildBits(r *rand.Rand, c addCase) uint64 {
	mbits := c.f.prec - 1
	sign := uint64(r.IntN(2)) << (c.ebits + mbits)
	expAll := (uint64(1)<<c.ebits - 1) << mbits
	mant := func() uint64 { return r.Uint64() & (1<<mbits - 1) }
	switch r.IntN(6) {
	case 0:
		m := mant()
		if m == 0 {
			m = 1
		}
		return sign | expAll | m
	case 1:
		return sign | expAll
	case 2:
		return sign | mant()
	case 3:
		return sign
	case 4:
		return c.specials[r.IntN(len(c.specials))]
	}
	return randBits(r, c)
}

// kernelLayouts are the element offsets of dst, a and b in their backing
// arrays, aligned and not, so that the vector loads and stores meet every
// misalignment the element size allows.
var kernelLayouts = [][3]int{{0, 0, 0}, {0, 1, 0}, {3, 0, 1}, {1, 2, 3}, {3, 3, 3}, {5, 7, 2}}

// pathPad is how many elements the backing arrays have around the slices,
// which must be left alone.
const pathPad = 8

// TestSliceKernelPaths checks every path of every slice kernel element by
// element against the scalar add at every length from 0 to 70, at
// misaligned starts, with dst separate, dst the very slice a and the very
// slice b, and that nothing around dst is written.
func TestSliceKernelPaths(t *testing.T) {
	r := testseed.Rand(t)
	for _, c := range addCases {
		switch c.f {
		case fmtBF16:
			checkPaths(t, r, c, []pathKernel[BFloat16]{{"AddBFloat16s", AddBFloat16s}, {"addBFloat16sGo", addBFloat16sGo}},
				func(x uint64) BFloat16 { return BFloat16(x) }, func(x BFloat16) uint64 { return uint64(x) })
		case fmtF16:
			checkPaths(t, r, c, []pathKernel[Float16]{{"AddFloat16s", AddFloat16s}, {"addFloat16sGo", addFloat16sGo}},
				func(x uint64) Float16 { return Float16(x) }, func(x Float16) uint64 { return uint64(x) })
		case fmtF32:
			checkPaths(t, r, c, []pathKernel[float32]{{"AddFloat32s", AddFloat32s}, {"addFloat32sGo", addFloat32sGo}},
				func(x uint64) float32 { return math.Float32frombits(uint32(x)) }, func(x float32) uint64 { return uint64(math.Float32bits(x)) })
		case fmtF64:
			checkPaths(t, r, c, []pathKernel[float64]{{"AddFloat64s", AddFloat64s}, {"addFloat64sGo", addFloat64sGo}},
				math.Float64frombits, math.Float64bits)
		}
	}
}

func checkPaths[T any](t *testing.T, r *rand.Rand, c addCase, kernels []pathKernel[T], from func(uint64) T, to func(T) uint64) {
	t.Helper()
	for n := 0; n <= 70; n++ {
		for _, l := range kernelLayouts {
			for _, alias := range []string{"none", "dst=a", "dst=b"} {
				for _, k := range kernels {
					// Operands: pairs whose sum rounds half the time, else
					// each from anywhere, NaNs included.
					a, b := make([]uint64, n+2*pathPad), make([]uint64, n+2*pathPad)
					for i := range a {
						if r.IntN(2) == 0 {
							a[i], b[i] = randPair(r, c)
						} else {
							a[i], b[i] = wildBits(r, c), wildBits(r, c)
						}
					}
					ta, tb, td := make([]T, len(a)), make([]T, len(b)), make([]T, len(a))
					for i := range a {
						ta[i], tb[i], td[i] = from(a[i]), from(b[i]), from(0xAA)
					}
					offD, offA, offB := l[0], l[1], l[2]
					switch alias {
					case "dst=a":
						td, offD, offB = ta, offA, offA
					case "dst=b":
						td, offD, offA = tb, offB, offB
					}
					before := make([]uint64, len(td))
					for i := range td {
						before[i] = to(td[i])
					}
					k.f(td[offD:offD+n], ta[offA:offA+n], tb[offB:offB+n])
					for i := range n {
						x, y := a[offA+i], b[offB+i]
						if got, want := to(td[offD+i]), c.add(x, y); got != want {
							t.Fatalf("%s, n=%d, offsets %d/%d/%d, %s: [%d] = %#x; want %#x (%#x + %#x)",
								k.name, n, offD, offA, offB, alias, i, got, want, x, y)
						}
					}
					for i := range td {
						if i >= offD && i < offD+n {
							continue
						}
						if got := to(td[i]); got != before[i] {
							t.Fatalf("%s, n=%d, offsets %d/%d/%d, %s: wrote outside dst at backing [%d]: %#x; was %#x",
								k.name, n, offD, offA, offB, alias, i, got, before[i])
						}
					}
				}
			}
		}
	}
}

// TestSliceKernels16AllOperands runs every 16-bit pattern, as a and as b,
// through the bfloat16 and float16 kernels against random partners, so that
// each vector rounding and NaN path sees every operand at least once.
func TestSliceKernels16AllOperands(t *testing.T) {
	r := testseed.Rand(t)
	rounds := 8
	if testing.Short() {
		rounds = 2
	}
	x, y := make([]uint16, 1<<16), make([]uint16, 1<<16)
	for round := range rounds {
		for i := range x {
			x[i], y[i] = uint16(i), uint16(r.Uint32())
			if round%2 == 1 {
				x[i], y[i] = y[i], x[i]
			}
		}
		bd, ba, bb := make([]BFloat16, len(x)), make([]BFloat16, len(x)), make([]BFloat16, len(x))
		hd, ha, hb := make([]Float16, len(x)), make([]Float16, len(x)), make([]Float16, len(x))
		for i := range x {
			ba[i], bb[i] = BFloat16(x[i]), BFloat16(y[i])
			ha[i], hb[i] = Float16(x[i]), Float16(y[i])
		}
		AddBFloat16s(bd, ba, bb)
		AddFloat16s(hd, ha, hb)
		for i := range x {
			if want := AddBFloat16(ba[i], bb[i]); bd[i] != want {
				t.Fatalf("AddBFloat16s: [%d] = %#04x; want %#04x (%#04x + %#04x)", i, bd[i], want, ba[i], bb[i])
			}
			if want := AddFloat16(ha[i], hb[i]); hd[i] != want {
				t.Fatalf("AddFloat16s: [%d] = %#04x; want %#04x (%#04x + %#04x)", i, hd[i], want, ha[i], hb[i])
			}
		}
	}
}
