package soak

import (
	"bytes"
	"math/rand/v2"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// Pool lengths, in elements (floats) and bytes (gathers). Odd, so that
// windows that wrap around start at every alignment.
const (
	floatPoolLen = 1<<17 + 3
	bytePoolLen  = 1<<18 + 1
)

// pools holds every rank's inputs and the reference sums, computed once:
// a call's input of rank r is a window of r's pool (wrapping around), at
// a place drawn from the call's seed, so that every rank knows every
// rank's input, and the expected sum of element i is the same window of
// the pool sum, which check.ReferenceSum (the tree evaluated element by
// element with the scalar adds) computed at the start. A check is then a
// comparison of bytes, however large the call.
type pools struct {
	world int
	float map[detcoll.DType]*floatPools
	bytes [][]byte // by rank
}

type floatPools struct {
	in [][]byte // by rank, floatPoolLen elements
	// want holds, by operator, the reference reduction of the ranks'
	// pools, element by element (check.ReferenceReduce, with the ranks'
	// PreMulSum factors of check.PremulFactor).
	want map[num.RedOp][]byte
}

func newPools(seed uint64, world int) *pools {
	p := &pools{world: world, float: map[detcoll.DType]*floatPools{}}
	for _, dt := range reduceTypes {
		fp := &floatPools{}
		for r := range world {
			// check.Input's seeded mix of ordinary values, specials (NaN
			// with payloads, infinities, subnormals) and random bits;
			// call 0 is the start of rank r's pool.
			in := check.Input(seed, 0, r, floatPoolLen, dt)
			noZeros(in, dt)
			fp.in = append(fp.in, in)
		}
		scalars := check.PremulFactors(dt, world)
		fp.want = map[num.RedOp][]byte{}
		for _, op := range num.RedOps() {
			fp.want[op] = check.ReferenceReduce(dt, op, fp.in, scalars)
		}
		p.float[dt] = fp
	}
	for r := range world {
		rng := rand.New(rand.NewPCG(seed^0x50A4, uint64(r)))
		b := make([]byte, bytePoolLen)
		for i := range b {
			b[i] = byte(1 + rng.IntN(255)) // never zero
		}
		p.bytes = append(p.bytes, b)
	}
	return p
}

// noZeros replaces +0 and -0 with 1: an input of zeros would let a
// result that skipped a rank's value pass.
func noZeros(b []byte, dt detcoll.DType) {
	size := dt.Size()
	var one uint64
	switch dt {
	case detcoll.TypeBFloat16:
		one = 0x3F80
	case detcoll.TypeFloat16:
		one = 0x3C00
	case detcoll.TypeFloat32:
		one = 0x3F800000
	default:
		one = 0x3FF0000000000000
	}
	sign := uint64(1) << (8*size - 1)
	for i := 0; i < len(b); i += size {
		if check.GetBits(b[i:], size)&^sign == 0 {
			check.PutBits(b[i:], size, one)
		}
	}
}

// seg is n bytes of a pool from byte start on, wrapping around.
type seg struct {
	pool     []byte
	start, n int
}

// fill copies the segment into dst (len n).
func (s seg) fill(dst []byte) {
	at := s.start % len(s.pool)
	for len(dst) > 0 {
		k := copy(dst, s.pool[at:])
		dst, at = dst[k:], 0
	}
}

// diff returns the first byte where got differs from the segment, or -1.
func (s seg) diff(got []byte) int {
	at, done := s.start%len(s.pool), 0
	for done < len(got) {
		k := min(len(got)-done, len(s.pool)-at)
		a, b := got[done:done+k], s.pool[at:at+k]
		if !bytes.Equal(a, b) {
			for i := range a {
				if a[i] != b[i] {
					return done + i
				}
			}
		}
		done, at = done+k, 0
	}
	return -1
}

// input returns the segment of rank's input for part of c (elements of
// the call's type; a reduce-scatter's whole input).
func (p *pools) input(c *Call, part, rank int) seg {
	size := c.DType.Size()
	n := c.Counts[part]
	if c.Op.scatters() {
		n *= p.world
	}
	if c.Op.Reduces() {
		return seg{p.float[c.DType].in[rank], c.window(part, rank, floatPoolLen) * size, n * size}
	}
	return seg{p.bytes[rank], c.window(part, rank, bytePoolLen), n * size}
}

// want returns the segments that rank's output of part must hold, in
// order.
func (p *pools) want(c *Call, part, rank int) []seg {
	size := c.DType.Size()
	n := c.Counts[part]
	switch {
	case c.Op.Reduces():
		fp := p.float[c.DType]
		start := c.window(part, 0, floatPoolLen)
		if c.Op.scatters() {
			start += rank * n
		}
		return []seg{{fp.want[c.Red], start * size, n * size}}
	case c.Op == OpBroadcast:
		return []seg{p.input(c, part, c.Root)}
	}
	out := make([]seg, p.world)
	for r := range out {
		out[r] = p.input(c, part, r)
	}
	return out
}
