package num

import (
	"math/rand/v2"
	"testing"
)

// benchSizes are the per-operand sizes the kernels are measured at: one that
// stays in L1 and one that streams from memory.
var benchSizes = []struct {
	name  string
	bytes int
}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}}

// benchKernel measures kernel on random normal-range data of each size.
// SetBytes counts the bytes read from both inputs.
func benchKernel[T any](b *testing.B, size int, kernel func(dst, a, b []T), gen func(*rand.Rand) T) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			n := s.bytes / size
			x, y, dst := make([]T, n), make([]T, n), make([]T, n)
			for i := range n {
				x[i], y[i] = gen(r), gen(r)
			}
			kernel(dst, x, y) // build the float16 table off the clock
			b.SetBytes(int64(2 * s.bytes))
			b.ReportAllocs()
			for b.Loop() {
				kernel(dst, x, y)
			}
		})
	}
}

func BenchmarkAddBFloat16s(b *testing.B) {
	benchKernel(b, 2, AddBFloat16s, func(r *rand.Rand) BFloat16 { return BFloat16FromFloat32(float32(r.NormFloat64())) })
}

func BenchmarkAddFloat16s(b *testing.B) {
	benchKernel(b, 2, AddFloat16s, func(r *rand.Rand) Float16 { return Float16FromFloat32(float32(r.NormFloat64())) })
}

func BenchmarkAddFloat32s(b *testing.B) {
	benchKernel(b, 4, AddFloat32s, func(r *rand.Rand) float32 { return float32(r.NormFloat64()) })
}

func BenchmarkAddFloat64s(b *testing.B) {
	benchKernel(b, 8, AddFloat64s, func(r *rand.Rand) float64 { return r.NormFloat64() })
}

// benchCombine measures Combine with node over dt (random normal values).
func benchCombine(b *testing.B, dt DType, node RedOp) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			x, y, dst := make([]byte, s.bytes), make([]byte, s.bytes), make([]byte, s.bytes)
			for i := range x {
				x[i], y[i] = byte(r.Uint32()), byte(r.Uint32())
			}
			b.SetBytes(int64(2 * s.bytes))
			for b.Loop() {
				Combine(dt, node, dst, x, y)
			}
		})
	}
}

func BenchmarkMaxBFloat16s(b *testing.B) { benchCombine(b, BFloat16Type, Max) }
func BenchmarkMinFloat16s(b *testing.B)  { benchCombine(b, Float16Type, Min) }
func BenchmarkMaxFloat32s(b *testing.B)  { benchCombine(b, Float32Type, Max) }
func BenchmarkMaxFloat64s(b *testing.B)  { benchCombine(b, Float64Type, Max) }
func BenchmarkMaxInt32s(b *testing.B)    { benchCombine(b, Int32Type, Max) }

// BenchmarkAverageFloat32s and BenchmarkPreMultiplyFloat32s: Avg's last
// step and PreMulSum's first, per byte of the buffer.
func BenchmarkAverageFloat32s(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			buf := AlignedBytes(s.bytes)
			for i := range AsFloat32s(buf) {
				AsFloat32s(buf)[i] = float32(i)
			}
			b.SetBytes(int64(s.bytes))
			for b.Loop() {
				Average(Float32Type, buf, 3)
			}
		})
	}
}

func BenchmarkPreMultiplyFloat32s(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			src, dst := AlignedBytes(s.bytes), AlignedBytes(s.bytes)
			for i := range AsFloat32s(src) {
				AsFloat32s(src)[i] = float32(i)
			}
			k := AlignedBytes(4)
			AsFloat32s(k)[0] = 0.37
			b.SetBytes(int64(s.bytes))
			for b.Loop() {
				PreMultiply(Float32Type, dst, src, k)
			}
		})
	}
}
