package num

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detcoll/detcoll/internal/testkit/testseed"
)

// randBits returns a bit pattern of c's width: a special value one time in
// four, otherwise a random pattern (or one with an exponent near e, so that
// neighbouring elements' sums round).
func randBits(r *rand.Rand, c addCase) uint64 {
	if r.IntN(4) == 0 {
		return c.specials[r.IntN(len(c.specials))]
	}
	a, b := randPair(r, c)
	if r.IntN(2) == 0 {
		return a
	}
	return b
}

// sliceLens are the lengths the kernels are checked at: empty, odd, and
// around the powers of two an unrolled loop would care about.
var sliceLens = []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 127, 255, 257, 1023, 1025, 4099}

// guard is how many elements past dst the kernels must leave alone.
const guard = 3

// TestSliceKernels checks each slice kernel element by element against the
// scalar add, with dst separate, dst the same slice as a, and as b, and that
// nothing past the end of dst is written.
func TestSliceKernels(t *testing.T) {
	r := testseed.Rand(t)
	for _, c := range addCases {
		for _, n := range sliceLens {
			for _, alias := range []string{"none", "dst=a", "dst=b"} {
				a, b := make([]uint64, n), make([]uint64, n)
				for i := range n {
					a[i], b[i] = randBits(r, c), randBits(r, c)
				}
				got := runKernel(c, a, b, alias)
				for i := range n {
					if want := c.add(a[i], b[i]); got[i] != want {
						t.Fatalf("%s kernel, n=%d, %s: [%d] = %#x; want %#x (%#x + %#x)", c.f.name, n, alias, i, got[i], want, a[i], b[i])
					}
				}
				for i := n; i < n+guard; i++ {
					if got[i] != 0xAA {
						t.Fatalf("%s kernel, n=%d, %s: wrote past dst at [%d]: %#x", c.f.name, n, alias, i, got[i])
					}
				}
			}
		}
	}
}

// runKernel runs c's slice kernel on a and b (bit patterns) and returns dst
// followed by guard elements, which start as 0xAA.
func runKernel(c addCase, a, b []uint64, alias string) []uint64 {
	n := len(a)
	switch c.f {
	case fmtBF16:
		return runTyped(a, b, alias, AddBFloat16s, func(x uint64) BFloat16 { return BFloat16(x) }, func(x BFloat16) uint64 { return uint64(x) })
	case fmtF16:
		return runTyped(a, b, alias, AddFloat16s, func(x uint64) Float16 { return Float16(x) }, func(x Float16) uint64 { return uint64(x) })
	case fmtF32:
		return runTyped(a, b, alias, AddFloat32s, func(x uint64) float32 { return math.Float32frombits(uint32(x)) }, func(x float32) uint64 { return uint64(math.Float32bits(x)) })
	case fmtF64:
		return runTyped(a, b, alias, AddFloat64s, math.Float64frombits, math.Float64bits)
	}
	panic(n)
}

func runTyped[T any](a, b []uint64, alias string, kernel func(dst, a, b []T), from func(uint64) T, to func(T) uint64) []uint64 {
	n := len(a)
	ta, tb := make([]T, n+guard), make([]T, n+guard)
	for i := range n {
		ta[i], tb[i] = from(a[i]), from(b[i])
	}
	dst := make([]T, n+guard)
	switch alias {
	case "dst=a":
		dst = ta
	case "dst=b":
		dst = tb
	}
	for i := n; i < n+guard; i++ {
		dst[i] = from(0xAA)
	}
	kernel(dst[:n], ta[:n], tb[:n])
	out := make([]uint64, n+guard)
	for i := range out {
		out[i] = to(dst[i])
	}
	return out
}

// TestSliceKernelLengthMismatch checks that unequal lengths panic.
func TestSliceKernelLengthMismatch(t *testing.T) {
	cases := []struct {
		name string
		f    func()
	}{
		{"bfloat16", func() { AddBFloat16s(make([]BFloat16, 2), make([]BFloat16, 3), make([]BFloat16, 2)) }},
		{"float16", func() { AddFloat16s(make([]Float16, 2), make([]Float16, 2), make([]Float16, 1)) }},
		{"float32", func() { AddFloat32s(make([]float32, 3), make([]float32, 2), make([]float32, 2)) }},
		{"float64", func() { AddFloat64s(make([]float64, 0), make([]float64, 1), make([]float64, 0)) }},
	}
	for _, c := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on unequal lengths", c.name)
				}
			}()
			c.f()
		}()
	}
}

// TestViews checks the byte views: length, aliasing the same memory, and the
// panics for misalignment and partial elements.
func TestViews(t *testing.T) {
	buf := AlignedBytes(64)
	if len(buf) != 64 {
		t.Fatalf("len(AlignedBytes(64)) = %d; want 64", len(buf))
	}
	f := AsFloat64s(buf)
	f[1] = 1
	if got := AsBFloat16s(buf)[7]; got != 0x3FF0 {
		t.Errorf("AsBFloat16s(buf)[7] = %#04x; want 0x3ff0 (top half of float64 1 at [1])", got)
	}
	if len(AsFloat32s(buf)) != 16 || len(AsFloat16s(buf)) != 32 || len(f) != 8 {
		t.Errorf("view lengths %d, %d, %d; want 16, 32, 8", len(AsFloat32s(buf)), len(AsFloat16s(buf)), len(f))
	}
	if got := len(AsFloat32s(nil)); got != 0 {
		t.Errorf("len(AsFloat32s(nil)) = %d; want 0", got)
	}
	for name, f := range map[string]func(){
		"misaligned": func() { AsFloat64s(buf[4:12]) },
		"partial":    func() { AsFloat32s(buf[:6]) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s view: no panic", name)
				}
			}()
			f()
		}()
	}
}
