package check

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
)

// FloatTypes are the element types reductions take.
var FloatTypes = []detcoll.DType{detcoll.TypeBFloat16, detcoll.TypeFloat16, detcoll.TypeFloat32, detcoll.TypeFloat64}

// Input returns rank's input of n elements of dt for one call,
// identical on every rank that asks (so each rank can compute the expected
// result of every peer): a mix of ordinary values, which make the adds
// round, and random bit patterns including NaN, infinities, subnormals and
// signed zeros.
//
// Inputs are windows of a per-rank pool, at an offset that depends on call:
// checks make many calls, and generating every rank's input afresh for
// each dominated their time. The pool grows on demand; the generator makes
// the same values in the same order whatever its length, so a window does
// not depend on when the pool grew.
func Input(seed uint64, call, rank, n int, dt detcoll.DType) []byte {
	const spread = 4096
	start := int((uint64(call)*0x9E3779B97F4A7C15)>>40) % (n + spread)
	pool := inputPool(seed, rank, dt, start+n)
	size := dt.Size()
	return bytes.Clone(pool[start*size : (start+n)*size])
}

type poolKey struct {
	seed uint64
	rank int
	dt   detcoll.DType
}

var (
	poolMu sync.Mutex
	pools  = map[poolKey][]byte{}
)

// inputPool returns at least n elements of rank's pool.
func inputPool(seed uint64, rank int, dt detcoll.DType, n int) []byte {
	poolMu.Lock()
	defer poolMu.Unlock()
	k := poolKey{seed, rank, dt}
	if p := pools[k]; len(p) >= n*dt.Size() {
		return p
	}
	p := generate(seed, uint64(rank), max(2*n, 1<<16), dt)
	pools[k] = p
	return p
}

func generate(seed, stream uint64, n int, dt detcoll.DType) []byte {
	rng := rand.New(rand.NewPCG(seed, stream))
	b := make([]byte, n*dt.Size())
	for i := range n {
		var bits uint64
		switch k := rng.IntN(16); {
		case k < 10: // ordinary values of mixed magnitude
			v := rng.NormFloat64() * math.Exp2(float64(rng.IntN(20)-10))
			switch dt {
			case detcoll.TypeBFloat16:
				bits = uint64(num.BFloat16FromFloat64(v))
			case detcoll.TypeFloat16:
				bits = uint64(num.Float16FromFloat64(v))
			case detcoll.TypeFloat32:
				bits = uint64(math.Float32bits(float32(v)))
			default:
				bits = math.Float64bits(v)
			}
		case k < 11: // specials
			specials := SpecialBits(dt)
			bits = specials[rng.IntN(len(specials))]
		default:
			bits = rng.Uint64()
		}
		PutBits(b[i*dt.Size():], dt.Size(), bits)
	}
	return b
}

// SpecialBits are the bit patterns of the special values of dt: signed
// zeros, subnormals, the normal boundary, the largest finite, infinities and
// NaNs with payloads.
func SpecialBits(dt detcoll.DType) []uint64 {
	switch dt.Size() {
	case 2:
		if dt == detcoll.TypeBFloat16 {
			return []uint64{0, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC1, 0xFFFF}
		}
		return []uint64{0, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E01, 0xFFFF}
	case 4:
		return []uint64{0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00001, 0xFFFFFFFF}
	default:
		return []uint64{0, 1 << 63, 1, 1<<63 | 1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,
			0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000001, 0xFFFFFFFFFFFFFFFF}
	}
}

// PutBits writes the low size bytes of bits to b, little endian.
func PutBits(b []byte, size int, bits uint64) {
	for j := range size {
		b[j] = byte(bits >> (8 * j))
	}
}

// GetBits reads size bytes of b as a little-endian number.
func GetBits(b []byte, size int) uint64 {
	var v uint64
	for j := range size {
		v |= uint64(b[j]) << (8 * j)
	}
	return v
}
