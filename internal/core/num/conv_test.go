package num

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/detcoll/detcoll/internal/testkit/testseed"
)

// TestBFloat16AllPatterns checks decoding, IsNaN, String and the round trips
// through float32 and float64 for every bfloat16 bit pattern.
func TestBFloat16AllPatterns(t *testing.T) {
	for i := range 1 << 16 {
		b := BFloat16(i)
		want := refDecode(uint64(i), fmtBF16)
		if got := b.Float64(); !sameValue(got, want) {
			t.Fatalf("BFloat16(%#04x).Float64() = %g; want %g", i, got, want)
		}
		if got := float64(b.Float32()); !sameValue(got, want) {
			t.Fatalf("BFloat16(%#04x).Float32() = %g; want %g", i, got, want)
		}
		if got := b.IsNaN(); got != math.IsNaN(want) {
			t.Fatalf("BFloat16(%#04x).IsNaN() = %v; want %v", i, got, !got)
		}
		wantBits := b
		if math.IsNaN(want) {
			wantBits = CanonicalNaNBFloat16
		}
		if got := BFloat16FromFloat32(b.Float32()); got != wantBits {
			t.Fatalf("BFloat16FromFloat32(BFloat16(%#04x).Float32()) = %#04x; want %#04x", i, got, wantBits)
		}
		if got := BFloat16FromFloat64(b.Float64()); got != wantBits {
			t.Fatalf("BFloat16FromFloat64(BFloat16(%#04x).Float64()) = %#04x; want %#04x", i, got, wantBits)
		}
		if p, err := strconv.ParseFloat(b.String(), 32); err != nil || !sameValue(p, want) {
			t.Fatalf("BFloat16(%#04x).String() = %q, parsing to %g, %v; want %g", i, b.String(), p, err, want)
		}
	}
}

// TestFloat16AllPatterns is TestBFloat16AllPatterns for float16, plus the
// lookup table the slice kernel uses.
func TestFloat16AllPatterns(t *testing.T) {
	tab := f16Table()
	for i := range 1 << 16 {
		h := Float16(i)
		want := refDecode(uint64(i), fmtF16)
		if got := h.Float64(); !sameValue(got, want) {
			t.Fatalf("Float16(%#04x).Float64() = %g; want %g", i, got, want)
		}
		if got := float64(h.Float32()); !sameValue(got, want) {
			t.Fatalf("Float16(%#04x).Float32() = %g; want %g", i, got, want)
		}
		if got, want := math.Float32bits(tab[i]), math.Float32bits(h.Float32()); got != want {
			t.Fatalf("f16Table[%#04x] = %#08x; want %#08x", i, got, want)
		}
		if got := h.IsNaN(); got != math.IsNaN(want) {
			t.Fatalf("Float16(%#04x).IsNaN() = %v; want %v", i, got, !got)
		}
		wantBits := h
		if math.IsNaN(want) {
			wantBits = CanonicalNaNFloat16
		}
		if got := Float16FromFloat32(h.Float32()); got != wantBits {
			t.Fatalf("Float16FromFloat32(Float16(%#04x).Float32()) = %#04x; want %#04x", i, got, wantBits)
		}
		if got := Float16FromFloat64(h.Float64()); got != wantBits {
			t.Fatalf("Float16FromFloat64(Float16(%#04x).Float64()) = %#04x; want %#04x", i, got, wantBits)
		}
		if p, err := strconv.ParseFloat(h.String(), 32); err != nil || !sameValue(p, want) {
			t.Fatalf("Float16(%#04x).String() = %q, parsing to %g, %v; want %g", i, h.String(), p, err, want)
		}
	}
}

// narrowConv is one float32 -> 16-bit conversion under test. block converts
// the len(dst) consecutive patterns from x on, so that the exhaustive scan
// makes one indirect call per block rather than per pattern.
type narrowConv struct {
	f     format
	nan   uint64
	block func(dst []uint16, x uint32)
}

var narrowConvs = []narrowConv{
	{fmtBF16, uint64(CanonicalNaNBFloat16), func(dst []uint16, x uint32) {
		for i := range dst {
			dst[i] = uint16(BFloat16FromFloat32(math.Float32frombits(x + uint32(i))))
		}
	}},
	{fmtF16, uint64(CanonicalNaNFloat16), func(dst []uint16, x uint32) {
		for i := range dst {
			dst[i] = uint16(Float16FromFloat32(math.Float32frombits(x + uint32(i))))
		}
	}},
}

func (c narrowConv) from(x uint32) uint64 {
	var b [1]uint16
	c.block(b[:], x)
	return uint64(b[0])
}

// checkFromFloat32 compares one conversion of the float32 with bits x against
// the reference, returning a message on a mismatch.
func checkFromFloat32(c narrowConv, x uint32) (msg string, ok bool) {
	v := math.Float32frombits(x)
	got := c.from(x)
	if v != v {
		if got != c.nan {
			return "NaN: got " + strconv.FormatUint(got, 16), false
		}
		return "", true
	}
	want := refRound64(float64(v), c.f)
	if gv := refDecode(got, c.f); !sameValue(gv, want) {
		return "got " + strconv.FormatUint(got, 16) + " = " + strconv.FormatFloat(gv, 'g', -1, 64) +
			"; want " + strconv.FormatFloat(want, 'g', -1, 64), false
	}
	return "", true
}

// TestFromFloat32AllPatterns checks BFloat16FromFloat32 and Float16FromFloat32
// for every float32 bit pattern, split across the CPUs. Calling the reference
// 2^32 times takes minutes, so it is called where the conversion's output
// changes: over the positive patterns in increasing order the conversion must
// be non-decreasing and must match the reference at both ends of every run of
// equal outputs. Round-to-nearest is monotone, so the reference is constant
// on each such run too and the two agree everywhere. Each negative pattern
// must give its positive twin's result with the sign set, and every NaN the
// canonical NaN. Under -short only every 4093rd pattern is checked, directly.
func TestFromFloat32AllPatterns(t *testing.T) {
	for _, c := range narrowConvs {
		t.Run(c.f.name, func(t *testing.T) {
			if testing.Short() {
				for x := uint64(0); x < 1<<32; x += 4093 {
					if msg, ok := checkFromFloat32(c, uint32(x)); !ok {
						t.Fatalf("float32 bits %#08x: %s", x, msg)
					}
				}
				return
			}
			workers := runtime.GOMAXPROCS(0)
			const total = 0x7F800001 // the positive non-NaN patterns, +0 to +Inf
			errs := make([]string, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					errs[w] = scanRuns(c, uint32(total/workers*w), uint32(min(total, total/workers*(w+1))))
				})
			}
			wg.Wait()
			for _, e := range errs {
				if e != "" {
					t.Error(e)
				}
			}
		})
	}
}

// scanRuns checks the positive patterns [lo, hi), their negative twins and
// the NaN patterns above them as TestFromFloat32AllPatterns describes, and
// returns the first failure.
func scanRuns(c narrowConv, lo, hi uint32) string {
	const neg = 0x80000000
	var pos, negs [4096]uint16
	var prev uint16
	if lo > 0 {
		prev = uint16(c.from(lo - 1))
	}
	for base := lo; base < hi; base += uint32(len(pos)) {
		n := min(uint32(len(pos)), hi-base)
		c.block(pos[:n], base)
		c.block(negs[:n], base|neg)
		for i, g := range pos[:n] {
			x := base + uint32(i)
			if g < prev {
				return fmt.Sprintf("float32 bits %#08x: got %#04x, below %#04x for the pattern before", x, g, prev)
			}
			if x == lo || g != prev {
				if x > 0 {
					if msg, ok := checkFromFloat32(c, x-1); !ok {
						return fmt.Sprintf("float32 bits %#08x: %s", x-1, msg)
					}
				}
				if msg, ok := checkFromFloat32(c, x); !ok {
					return fmt.Sprintf("float32 bits %#08x: %s", x, msg)
				}
			}
			if gn := negs[i]; gn != g|0x8000 {
				return fmt.Sprintf("float32 bits %#08x: got %#04x; want %#04x (the positive result with the sign set)", x|neg, gn, g|0x8000)
			}
			prev = g
		}
	}
	if hi == 0x7F800001 {
		if msg, ok := checkFromFloat32(c, hi-1); !ok {
			return fmt.Sprintf("float32 bits %#08x: %s", hi-1, msg)
		}
	}
	// The NaN patterns: all ones in the exponent, any nonzero mantissa.
	if lo == 0 {
		for m := uint32(1); m < 1<<23; m++ {
			for _, y := range []uint32{0x7F800000 | m, 0xFF800000 | m} {
				if got := c.from(y); got != c.nan {
					return fmt.Sprintf("float32 bits %#08x (NaN): got %#04x; want %#04x", y, got, c.nan)
				}
			}
		}
	}
	return ""
}

// TestFromFloatHalfways checks the float32 and float64 conversions at every
// halfway point between adjacent 16-bit values (including the overflow
// threshold past the largest finite and the ties among the subnormals), at
// every representable value, and at their float32 and float64 neighbours.
// A float64 just off a tie is where rounding through float32 first would go
// wrong.
func TestFromFloatHalfways(t *testing.T) {
	from64 := map[string]func(float64) uint64{
		"bfloat16": func(x float64) uint64 { return uint64(BFloat16FromFloat64(x)) },
		"float16":  func(x float64) uint64 { return uint64(Float16FromFloat64(x)) },
	}
	for _, c := range narrowConvs {
		t.Run(c.f.name, func(t *testing.T) {
			inf := refDecode(0x7C00, c.f)
			if c.f == fmtBF16 {
				inf = refDecode(0x7F80, c.f)
			}
			conv64 := from64[c.f.name]
			for bits := uint64(0); ; bits++ {
				v := refDecode(bits, c.f)
				if v == inf {
					break
				}
				next := refDecode(bits+1, c.f)
				if next == inf {
					next = math.Ldexp(1, c.f.maxExp+1)
				}
				mid := (v + next) / 2
				for _, x := range []float64{v, mid, -v, -mid} {
					for _, y := range []float64{x, math.Nextafter(x, math.Inf(-1)), math.Nextafter(x, math.Inf(1))} {
						want := refRound64(y, c.f)
						if got := conv64(y); !sameValue(refDecode(got, c.f), want) {
							t.Fatalf("%sFromFloat64(%g) = %#04x; want %g", c.f.name, y, got, want)
						}
					}
					x32 := float32(x)
					if float64(x32) != x {
						t.Fatalf("%g is not a float32", x)
					}
					for _, y := range []float32{x32, math.Nextafter32(x32, float32(math.Inf(-1))), math.Nextafter32(x32, float32(math.Inf(1)))} {
						if msg, ok := checkFromFloat32(c, math.Float32bits(y)); !ok {
							t.Fatalf("%sFromFloat32(%g): %s", c.f.name, y, msg)
						}
					}
				}
			}
		})
	}
}

// TestFromFloat64Random checks the float64 conversions against refRound64 on
// random float64s: a third with any bit pattern, the rest with exponents
// around the 16-bit formats' range. 1,000,000 values per type, 100,000 under
// -short.
func TestFromFloat64Random(t *testing.T) {
	n := 1000000
	if testing.Short() {
		n = 100000
	}
	r := testseed.Rand(t)
	for range n {
		var x float64
		if r.IntN(3) == 0 {
			x = math.Float64frombits(r.Uint64())
		} else {
			x = math.Float64frombits(r.Uint64()&(1<<63|1<<52-1) | uint64(1023-140+r.IntN(280))<<52)
		}
		if got, want := BFloat16FromFloat64(x), refRound64(x, fmtBF16); !sameValue(refDecode(uint64(got), fmtBF16), want) && !(math.IsNaN(x) && got == CanonicalNaNBFloat16) {
			t.Fatalf("BFloat16FromFloat64(%g [%#016x]) = %#04x; want %g", x, math.Float64bits(x), got, want)
		}
		if got, want := Float16FromFloat64(x), refRound64(x, fmtF16); !sameValue(refDecode(uint64(got), fmtF16), want) && !(math.IsNaN(x) && got == CanonicalNaNFloat16) {
			t.Fatalf("Float16FromFloat64(%g [%#016x]) = %#04x; want %g", x, math.Float64bits(x), got, want)
		}
		if math.IsNaN(x) {
			if got := BFloat16FromFloat64(x); got != CanonicalNaNBFloat16 {
				t.Fatalf("BFloat16FromFloat64(NaN %#016x) = %#04x; want %#04x", math.Float64bits(x), got, CanonicalNaNBFloat16)
			}
			if got := Float16FromFloat64(x); got != CanonicalNaNFloat16 {
				t.Fatalf("Float16FromFloat64(NaN %#016x) = %#04x; want %#04x", math.Float64bits(x), got, CanonicalNaNFloat16)
			}
		}
		// roundFloat64 serves any width; Go's own conversion is a check on
		// it at float32.
		if got, want := roundFloat64(x, 23, 8, uint64(CanonicalNaNFloat32)), math.Float32bits(float32(x)); got != uint64(want) && !math.IsNaN(x) {
			t.Fatalf("roundFloat64(%g [%#016x], float32) = %#08x; want %#08x", x, math.Float64bits(x), got, want)
		}
	}
}
