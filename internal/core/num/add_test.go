package num

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/detcoll/detcoll/internal/testkit/testseed"
)

// addCase is one element type's scalar add, on raw bit patterns, with what
// the oracle needs to know about the type.
type addCase struct {
	f     format
	ebits int    // exponent field width
	nan   uint64 // canonical NaN bits
	add   func(a, b uint64) uint64
	// specials are the edge values every pair of which is checked.
	specials []uint64
}

// specialsOf lists, for a format with ebits exponent and mbits mantissa
// bits: ±0, the smallest and largest subnormals, the smallest normal, ±1 and
// the values around it that make ties, the largest finite and its
// neighbours (pairs of them overflow, or round to overflow), ±Inf and NaNs
// with several payloads and both signs.
func specialsOf(ebits, mbits int) []uint64 {
	sign := uint64(1) << (ebits + mbits)
	expAll := uint64(1<<ebits-1) << mbits
	bias := 1<<(ebits-1) - 1
	pow2 := func(e int) uint64 { return uint64(e+bias) << mbits }
	maxFinite := expAll - 1
	pos := []uint64{
		0, 1, 2, 3, 1<<mbits - 1, 1 << mbits, 1<<mbits + 1, // zero, subnormals, smallest normals
		pow2(0), pow2(0) + 1, pow2(0) - 1, pow2(1), // 1, its neighbours, 2
		pow2(-mbits),           // an ulp of 1
		pow2(-mbits - 1),       // half an ulp of 1: 1 plus it is a tie
		pow2(-mbits-1) + 1,     // just above that
		pow2(-mbits - 2),       // a quarter ulp of 1
		maxFinite,              // largest finite: doubled, it overflows
		maxFinite - 1,          // below it
		pow2(bias),             // 2^emax
		pow2(bias - mbits - 1), // half an ulp of the largest finite: their sum is the overflow tie
		pow2(bias-mbits-1) - 1, // just below that: rounds back to the largest finite
		expAll,                 // Inf
	}
	out := make([]uint64, 0, 2*len(pos)+5)
	for _, p := range pos {
		out = append(out, p, p|sign)
	}
	return append(out, expAll|1, expAll|1<<(mbits-1), expAll|1<<mbits-1, sign|expAll|1, sign|expAll|1<<(mbits-1))
}

var addCases = []addCase{
	{fmtBF16, 8, uint64(CanonicalNaNBFloat16), func(a, b uint64) uint64 {
		return uint64(AddBFloat16(BFloat16(a), BFloat16(b)))
	}, specialsOf(8, 7)},
	{fmtF16, 5, uint64(CanonicalNaNFloat16), func(a, b uint64) uint64 {
		return uint64(AddFloat16(Float16(a), Float16(b)))
	}, specialsOf(5, 10)},
	{fmtF32, 8, uint64(CanonicalNaNFloat32), func(a, b uint64) uint64 {
		return uint64(math.Float32bits(AddFloat32(math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b)))))
	}, specialsOf(8, 23)},
	{fmtF64, 11, CanonicalNaNFloat64, func(a, b uint64) uint64 {
		return math.Float64bits(AddFloat64(math.Float64frombits(a), math.Float64frombits(b)))
	}, specialsOf(11, 52)},
}

func (c addCase) width() int { return 1 + c.ebits + c.f.prec - 1 }

// adder evaluates the oracle: the exact sum, then one rounding to the format.
type adder struct {
	br      bigRounder
	x, y, z big.Float
}

// want returns the correctly rounded sum of the values with bits a and b as a
// float64, or NaN where IEEE gives a NaN.
func (o *adder) want(c addCase, a, b uint64) float64 {
	va, vb := refDecode(a, c.f), refDecode(b, c.f)
	switch {
	case math.IsNaN(va) || math.IsNaN(vb):
		return math.NaN()
	case math.IsInf(va, 0) && math.IsInf(vb, 0) && va != vb:
		return math.NaN()
	case math.IsInf(va, 0):
		return va
	case math.IsInf(vb, 0):
		return vb
	case va+vb == 0 && va == -vb: // an exact zero: -0 only for -0 + -0
		if math.Signbit(va) && math.Signbit(vb) {
			return math.Copysign(0, -1)
		}
		return 0
	}
	// Where float64 holds the sum exactly (the error term of TwoSum is zero,
	// no multiplication so nothing to fuse), round that; otherwise sum in
	// math/big with room for every bit.
	if s := va + vb; !math.IsInf(s, 0) {
		if bb := s - va; (va-(s-bb))+(vb-bb) == 0 {
			return refRound64(s, c.f)
		}
	}
	o.x.SetPrec(2200).SetFloat64(va)
	o.y.SetPrec(2200).SetFloat64(vb)
	o.z.SetPrec(2200).Add(&o.x, &o.y)
	if o.z.Acc() != big.Exact {
		panic("adder: inexact big sum")
	}
	return o.br.round(&o.z, c.f)
}

// check returns a failure message if the add of a and b is wrong.
func (o *adder) check(c addCase, a, b uint64) (string, bool) {
	got := c.add(a, b)
	want := o.want(c, a, b)
	if math.IsNaN(want) {
		if got != c.nan {
			return fmt.Sprintf("add %s %#x + %#x = %#x; want canonical NaN %#x", c.f.name, a, b, got, c.nan), false
		}
		return "", true
	}
	if gv := refDecode(got, c.f); !sameValue(gv, want) {
		return fmt.Sprintf("add %s %#x + %#x = %#x (%g); want %g (%g + %g)", c.f.name, a, b, got, gv, want,
			refDecode(a, c.f), refDecode(b, c.f)), false
	}
	return "", true
}

// TestAddSpecials checks every ordered pair of each type's special values.
func TestAddSpecials(t *testing.T) {
	var o adder
	for _, c := range addCases {
		for _, a := range c.specials {
			for _, b := range c.specials {
				if msg, ok := o.check(c, a, b); !ok {
					t.Error(msg)
				}
			}
		}
	}
}

// TestAddRandom checks each type's add on random pairs: half with random bit
// patterns, half with the second operand's exponent within prec+2 of the
// first's so that the sum has bits to round away (and cancels, and ties).
// 10,000,000 pairs per type; under -short 200,000. The work is split across
// the CPUs, each worker with its own generator seeded from the logged seed.
func TestAddRandom(t *testing.T) {
	n := 10000000
	if testing.Short() {
		n = 200000
	}
	seed := testseed.Rand(t).Uint64()
	for ci, c := range addCases {
		t.Run(c.f.name, func(t *testing.T) {
			workers := runtime.GOMAXPROCS(0)
			errs := make([]string, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(ci*1000+w)))
					var o adder
					for range n / workers {
						a, b := randPair(r, c)
						if msg, ok := o.check(c, a, b); !ok {
							errs[w] = msg
							return
						}
					}
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

// randPair returns two bit patterns of c's width: independent and uniform,
// or with nearby exponents.
func randPair(r *rand.Rand, c addCase) (a, b uint64) {
	mask := uint64(1)<<c.width() - 1
	if c.width() == 64 {
		mask = ^uint64(0)
	}
	a, b = r.Uint64()&mask, r.Uint64()&mask
	if r.IntN(2) == 0 {
		return a, b
	}
	mbits := c.f.prec - 1
	emask := uint64(1)<<c.ebits - 1
	ea := int(a >> mbits & emask)
	eb := ea + r.IntN(2*c.f.prec+5) - c.f.prec - 2
	eb = max(0, min(eb, int(emask)-1))
	b = b&^(emask<<mbits) | uint64(eb)<<mbits
	return a, b
}
