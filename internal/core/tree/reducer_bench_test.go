package tree

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/detcoll/detcoll/internal/core/num"
)

// BenchmarkReduce measures Reduce for W = 2, 4, 8 on random normal-range
// data, per dtype and per-buffer size. SetBytes counts the bytes read from
// all W sources.
func BenchmarkReduce(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dt := range reducible {
		for _, w := range []int{2, 4, 8} {
			for _, size := range []struct {
				name  string
				bytes int
			}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}} {
				b.Run(fmt.Sprintf("%s/W=%d/%s", dt, w, size.name), func(b *testing.B) {
					srcs := make([][]byte, w)
					for j := range srcs {
						srcs[j] = num.AlignedBytes(size.bytes)
						fill(r, dt, srcs[j])
					}
					dst := num.AlignedBytes(size.bytes)
					var red Reducer
					red.Reduce(dt, num.Sum, dst, srcs) // allocate the scratch off the clock
					b.SetBytes(int64(w * size.bytes))
					b.ReportAllocs()
					for b.Loop() {
						red.Reduce(dt, num.Sum, dst, srcs)
					}
				})
			}
		}
	}
}

func fill(r *rand.Rand, dt num.DType, b []byte) {
	switch dt {
	case num.BFloat16Type:
		for i := range num.AsBFloat16s(b) {
			num.AsBFloat16s(b)[i] = num.BFloat16FromFloat64(r.NormFloat64())
		}
	case num.Float16Type:
		for i := range num.AsFloat16s(b) {
			num.AsFloat16s(b)[i] = num.Float16FromFloat64(r.NormFloat64())
		}
	case num.Float32Type:
		for i := range num.AsFloat32s(b) {
			num.AsFloat32s(b)[i] = float32(r.NormFloat64())
		}
	case num.Float64Type:
		for i := range num.AsFloat64s(b) {
			num.AsFloat64s(b)[i] = r.NormFloat64()
		}
	}
}
