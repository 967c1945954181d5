package check

import (
	"bytes"
	"math/rand/v2"

	"github.com/detcoll/detcoll"
)

// nanBits returns the canonical NaN of dt and a predicate for NaN bit
// patterns of dt: the contract's definition, written from the formats'
// bit layouts and not from internal/core/num.
func nanBits(dt detcoll.DType) (canonical uint64, isNaN func(uint64) bool) {
	switch dt.Size() {
	case 2:
		exp := uint64(0x7c00) // float16
		if dt == detcoll.TypeBFloat16 {
			exp = 0x7f80
		}
		return 0x7fff, func(v uint64) bool { return v&0x7fff > exp }
	case 4:
		return 0x7fffffff, func(v uint64) bool { return v&0x7fffffff > 0x7f800000 }
	}
	return 0x7fffffffffffffff, func(v uint64) bool { return v&(1<<63-1) > 0x7ff0000000000000 }
}

// NaNInput returns n elements of the float type dt: random bits, and
// every third element a NaN with a random payload and sign (never the
// canonical one).
func NaNInput(dt detcoll.DType, n int, seed uint64) []byte {
	size := dt.Size()
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n*size)
	for i := range n {
		v := rng.Uint64()
		if i%3 == 0 {
			switch size {
			case 2:
				exp := uint64(0x7c00)
				if dt == detcoll.TypeBFloat16 {
					exp = 0x7f80
				}
				v = exp | (v & (0x7fff &^ exp) &^ 1) | 1 | (v>>20&1)<<15
			case 4:
				v = 0x7f800000 | (v & 0x7ffffe) | 1 | (v>>40&1)<<31
			default:
				v = 0x7ff0000000000000 | (v & 0xffffffffffffe) | 1 | (v>>60&1)<<63
			}
		}
		PutBits(b[i*size:], size, v)
	}
	return b
}

// Canonical returns in with every NaN replaced by dt's canonical NaN: the
// sum over one rank, by the formats' definition alone.
func Canonical(dt detcoll.DType, in []byte) []byte {
	size := dt.Size()
	canon, isNaN := nanBits(dt)
	out := bytes.Clone(in)
	for i := 0; i < len(out); i += size {
		if isNaN(GetBits(out[i:], size)) {
			PutBits(out[i:], size, canon)
		}
	}
	return out
}
