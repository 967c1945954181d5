package bench

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/detcoll/detcoll/internal/core/num"
)

// Input returns rank's input for one row: n elements of dt, uniform in
// [1, 2) rounded to dt. They are never zero (a zero page can be cheaper to
// read), never subnormal (slow on some CPUs), and their sums stay normal.
// The stream depends on seed, rank and row only.
func Input(dt num.DType, n int, seed uint64, rank, row int) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(rank)<<32|uint64(row)))
	size := dt.Size()
	b := num.AlignedBytes(n * size)
	for i := range n {
		v := 1 + rng.Float64()
		p := b[i*size:]
		switch dt {
		case num.BFloat16Type:
			binary.NativeEndian.PutUint16(p, uint16(num.BFloat16FromFloat64(v)))
		case num.Float16Type:
			binary.NativeEndian.PutUint16(p, uint16(num.Float16FromFloat64(v)))
		case num.Float32Type:
			binary.NativeEndian.PutUint32(p, math.Float32bits(float32(v)))
		case num.Float64Type:
			binary.NativeEndian.PutUint64(p, math.Float64bits(v))
		default:
			panic("bench: Input of a non-float type " + dt.String())
		}
	}
	return b
}

// touch writes every page of b, so that the first timed call does not pay
// for page faults.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0xA5
	}
	if len(b) > 0 {
		b[len(b)-1] = 0xA5
	}
}
