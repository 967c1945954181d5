package num

import (
	"math"
	"math/big"
	"testing"

	"github.com/detcoll/detcoll/internal/testkit/testseed"
)

// This file holds the test oracle: an independent description of each
// binary format, decoding by Ldexp and rounding by float64 arithmetic or
// math/big, sharing no code or bit tricks with the package.

// format describes an IEEE-style binary format: prec significand bits
// (including the implicit one), minExp the exponent of the smallest normal,
// maxExp that of the largest finite value.
type format struct {
	name           string
	prec           int
	minExp, maxExp int
}

var (
	fmtBF16 = format{"bfloat16", 8, -126, 127}
	fmtF16  = format{"float16", 11, -14, 15}
	fmtF32  = format{"float32", 24, -126, 127}
	fmtF64  = format{"float64", 53, -1022, 1023}
)

func (f format) maxFinite() float64 {
	return math.Ldexp(2-math.Ldexp(1, 1-f.prec), f.maxExp)
}

// refDecode returns the value of the bit pattern bits of f (width 1 + exponent
// + prec-1 bits) as a float64; NaN patterns give a NaN.
func refDecode(bits uint64, f format) float64 {
	mbits := f.prec - 1
	ebits := 0
	for 1<<ebits-1 < 2*f.maxExp+1 {
		ebits++
	}
	neg := bits>>(mbits+ebits)&1 == 1
	e := int(bits >> mbits & (1<<ebits - 1))
	m := float64(bits & (1<<mbits - 1))
	var v float64
	switch {
	case e == 1<<ebits-1 && m != 0:
		return math.NaN()
	case e == 1<<ebits-1:
		v = math.Inf(1)
	case e == 0:
		v = math.Ldexp(m, f.minExp-mbits)
	default:
		v = math.Ldexp(math.Ldexp(1, mbits)+m, e-f.maxExp-mbits)
	}
	if neg {
		v = -v
	}
	return v
}

// refRound64 rounds the float64 x to f, ties to even, subnormals kept, as if
// the exponent were unbounded and then overflowing to ±Inf. The result is
// returned as a float64 (every value of the narrower formats is one). It
// scales x so that f's quantum at x becomes 1, rounds to an integer with
// Floor, and scales back: all steps are exact in float64.
func refRound64(x float64, f format) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	ax := math.Abs(x)
	_, e := math.Frexp(ax) // ax in [2^(e-1), 2^e)
	q := max(e-1, f.minExp) - (f.prec - 1)
	y := math.Ldexp(ax, -q)
	r := math.Floor(y)
	if d := y - r; d > 0.5 || d == 0.5 && math.Mod(r, 2) == 1 {
		r++
	}
	v := math.Ldexp(r, q)
	if v > f.maxFinite() {
		v = math.Inf(1)
	}
	return math.Copysign(v, x)
}

// bigRounder rounds exact big.Float values to a format; its scratch value is
// reused so that the random tests do not allocate per pair.
type bigRounder struct{ tmp big.Float }

// round rounds the finite x to f like refRound64, using big.Float's
// ToNearestEven at a precision cut down for subnormal results.
func (br *bigRounder) round(x *big.Float, f format) float64 {
	if x.Sign() == 0 {
		if x.Signbit() {
			return math.Copysign(0, -1)
		}
		return 0
	}
	e := x.MantExp(nil) - 1 // |x| in [2^e, 2^(e+1))
	p := f.prec
	if e < f.minExp {
		p -= f.minExp - e
	}
	var v float64
	switch {
	case p < 0: // below half the smallest subnormal
		v = 0
	case p == 0: // in [q/2, q) for the smallest subnormal q: a tie goes to 0
		q := math.Ldexp(1, f.minExp-f.prec+1)
		half := new(big.Float).SetFloat64(q / 2)
		if new(big.Float).Abs(x).Cmp(half) > 0 {
			v = q
		}
	default:
		br.tmp.SetMode(big.ToNearestEven)
		br.tmp.SetPrec(uint(p))
		br.tmp.Set(x)
		br.tmp.Abs(&br.tmp)
		var acc big.Accuracy
		v, acc = br.tmp.Float64()
		if acc != big.Exact && !math.IsInf(v, 0) {
			panic("refRoundBig: inexact float64 of a rounded value")
		}
	}
	if v > f.maxFinite() {
		v = math.Inf(1)
	}
	if x.Signbit() {
		v = -v
	}
	return v
}

// sameValue reports whether got and want are the same float64, telling -0
// from +0; two NaNs are the same.
func sameValue(got, want float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	return got == want && math.Signbit(got) == math.Signbit(want)
}

// TestReference checks the oracle itself on values worked out by hand, and
// refRound64 against the bigRounder on float32 targets where Go's own
// float64 -> float32 conversion is a third opinion.
func TestReference(t *testing.T) {
	cases := []struct {
		x    float64
		f    format
		want float64
	}{
		{1 + 0x1p-8, fmtBF16, 1},                             // tie, even below
		{1 + 3*0x1p-8, fmtBF16, 1 + 0x1p-6},                  // tie, even above
		{1 + 0x1p-8 + 0x1p-30, fmtBF16, 1 + 0x1p-7},          // just above a tie
		{65504, fmtF16, 65504},                               // largest finite
		{65519.99, fmtF16, 65504},                            // below the overflow threshold
		{65520, fmtF16, math.Inf(1)},                         // overflow threshold (tie to even: Inf)
		{0x1p-25, fmtF16, 0},                                 // half the smallest subnormal: tie to 0
		{0x1p-25 + 0x1p-40, fmtF16, 0x1p-24},                 // just above it
		{3 * 0x1p-25, fmtF16, 0x1p-23},                       // 1.5 quanta: tie to even 2
		{-0x1p-26, fmtF16, math.Copysign(0, -1)},             // underflow keeps the sign
		{0x1p-14 - 0x1p-25, fmtF16, 0x1p-14},                 // rounds up into the normals
		{0x1p-133, fmtBF16, 0x1p-133},                        // smallest bfloat16 subnormal
		{0x1p-149, fmtF32, 0x1p-149},                         // smallest float32 subnormal
		{0x1p-150, fmtF32, 0},                                // tie to 0
		{math.MaxFloat32, fmtF32, math.MaxFloat32},           // largest finite
		{math.MaxFloat32 + 0x1p103, fmtF32, math.Inf(1)},     // overflow threshold
		{math.MaxFloat32 + 0x1p102, fmtF32, math.MaxFloat32}, // below it
	}
	var br bigRounder
	for _, c := range cases {
		if got := refRound64(c.x, c.f); !sameValue(got, c.want) {
			t.Errorf("refRound64(%g, %s) = %g; want %g", c.x, c.f.name, got, c.want)
		}
		if got := br.round(new(big.Float).SetFloat64(c.x), c.f); !sameValue(got, c.want) {
			t.Errorf("bigRounder.round(%g, %s) = %g; want %g", c.x, c.f.name, got, c.want)
		}
	}
	r := testseed.Rand(t)
	x := new(big.Float)
	for range 100000 {
		// Exponents from below the float32 subnormals to past its overflow.
		v := math.Float64frombits(r.Uint64()&(1<<63|1<<52-1) | uint64(1023-160+r.IntN(300))<<52)
		want := float64(float32(v))
		if got := refRound64(v, fmtF32); !sameValue(got, want) {
			t.Fatalf("refRound64(%x, float32) = %g; want %g", math.Float64bits(v), got, want)
		}
		if got := br.round(x.SetFloat64(v), fmtF32); !sameValue(got, want) {
			t.Fatalf("bigRounder.round(%x, float32) = %g; want %g", math.Float64bits(v), got, want)
		}
	}
}
