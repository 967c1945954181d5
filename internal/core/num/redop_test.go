package num

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/detcoll/detcoll/internal/core/settings"
	"github.com/detcoll/detcoll/internal/testkit/testseed"
)

// orderKey16 maps a 16-bit float that is not a NaN to an integer in the
// order Max and Min use (-0 below +0), from its bits alone: flip every bit
// of a negative value, only the sign bit of a positive one. It is the
// independent reference of the float comparisons in combine.
func orderKey16(v uint16) uint16 {
	if v&0x8000 != 0 {
		return ^v
	}
	return v | 0x8000
}

// refMaxMin16 is Max or Min of two 16-bit floats by orderKey16; isNaN
// tells the type's NaNs.
func refMaxMin16(node RedOp, a, b uint16, isNaN func(uint16) bool, nan uint16) uint16 {
	if isNaN(a) || isNaN(b) {
		return nan
	}
	if (orderKey16(a) > orderKey16(b)) == (node == Max) && a != b {
		return a
	}
	if a == b {
		return a
	}
	return b
}

func bf16IsNaN(v uint16) bool { return v&0x7FFF > 0x7F80 }
func f16IsNaN(v uint16) bool  { return v&0x7FFF > 0x7C00 }

// pairOperands are the b operands every a meets: every pattern unless
// DETCOLL_EXHAUSTIVE=1 asks for all 2^32 pairs (about a minute per type
// and operator on 16 cores), else each sign and exponent with the
// mantissas 0, 1, the middle one and the largest, which covers every
// boundary of the order (Max and Min only ever pick an operand).
func pairOperands(mbits int) []uint16 {
	if settings.Get(settings.Exhaustive) == "1" {
		all := make([]uint16, 1<<16)
		for i := range all {
			all[i] = uint16(i)
		}
		return all
	}
	var bs []uint16
	for hi := range 1 << (15 - mbits + 1) { // sign and exponent
		for _, m := range []uint16{0, 1, 1 << (mbits - 1), 1<<mbits - 1} {
			bs = append(bs, uint16(hi)<<mbits|m)
		}
	}
	return bs
}

// TestMaxMin16AllOperands: Max and Min of bfloat16 and float16, every a
// against pairOperands, both operand orders, against orderKey16.
func TestMaxMin16AllOperands(t *testing.T) {
	for _, tc := range []struct {
		dt    DType
		mbits int
		isNaN func(uint16) bool
		nan   uint16
	}{{BFloat16Type, 7, bf16IsNaN, uint16(CanonicalNaNBFloat16)}, {Float16Type, 10, f16IsNaN, uint16(CanonicalNaNFloat16)}} {
		bs := pairOperands(tc.mbits)
		for _, node := range []RedOp{Max, Min} {
			var wg sync.WaitGroup
			var mu sync.Mutex
			bad := 0
			next := make(chan int)
			for range runtime.GOMAXPROCS(0) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					as, got := make([]byte, 2*len(bs)), make([]byte, 2*len(bs))
					bb := make([]byte, 2*len(bs))
					for i, b := range bs {
						binary.LittleEndian.PutUint16(bb[2*i:], b)
					}
					for a := range next {
						for i := range bs {
							binary.LittleEndian.PutUint16(as[2*i:], uint16(a))
						}
						for _, order := range [2][2][]byte{{as, bb}, {bb, as}} {
							Combine(tc.dt, node, got, order[0], order[1])
							for i, b := range bs {
								x, y := uint16(a), b
								if &order[0][0] == &bb[0] {
									x, y = b, uint16(a)
								}
								want := refMaxMin16(node, x, y, tc.isNaN, tc.nan)
								if g := binary.LittleEndian.Uint16(got[2*i:]); g != want {
									mu.Lock()
									if bad++; bad <= 10 {
										t.Errorf("%v %v(%#04x, %#04x) = %#04x, want %#04x", tc.dt, node, x, y, g, want)
									}
									mu.Unlock()
								}
							}
						}
					}
				}()
			}
			for a := range 1 << 16 {
				next <- a
			}
			close(next)
			wg.Wait()
		}
	}
}

// TestMaxMinSpecials: the cases the contract names, in every float type.
func TestMaxMinSpecials(t *testing.T) {
	negZero, nan := math.Copysign(0, -1), math.NaN()
	for _, c := range []struct {
		node       RedOp
		a, b, want float64
	}{
		{Max, negZero, 0, 0}, {Max, 0, negZero, 0}, {Min, negZero, 0, negZero}, {Min, 0, negZero, negZero},
		{Max, negZero, negZero, negZero}, {Max, 1, 2, 2}, {Min, 1, 2, 1}, {Max, math.Inf(-1), -5, -5},
		{Max, math.Inf(1), 7, math.Inf(1)}, {Min, math.Inf(-1), 7, math.Inf(-1)},
		{Max, nan, 1, nan}, {Max, 1, nan, nan}, {Min, nan, math.Inf(-1), nan},
	} {
		for _, dt := range []DType{BFloat16Type, Float16Type, Float32Type, Float64Type} {
			a, b, want := encode(dt, c.a), encode(dt, c.b), encode(dt, c.want)
			got := make([]byte, dt.Size())
			Combine(dt, c.node, got, a, b)
			if string(got) != string(want) {
				t.Errorf("%v %v(%v, %v) = %x, want %x", dt, c.node, c.a, c.b, got, want)
			}
		}
	}
}

// encode is v as one element of dt, NaN canonical.
func encode(dt DType, v float64) []byte {
	b := AlignedBytes(dt.Size())
	switch dt {
	case BFloat16Type:
		AsBFloat16s(b)[0] = BFloat16FromFloat64(v)
	case Float16Type:
		AsFloat16s(b)[0] = Float16FromFloat64(v)
	case Float32Type:
		AsFloat32s(b)[0] = float32(v)
		canonFloat32s(AsFloat32s(b))
	case Float64Type:
		AsFloat64s(b)[0] = v
		canonFloat64s(AsFloat64s(b))
	}
	return b
}

// TestIntegerOps: the wrapping sum, max and min of every integer type on
// random operands and the extremes, against int64 and uint64 arithmetic
// cut to the type's width.
func TestIntegerOps(t *testing.T) {
	rng := testseed.Rand(t)
	for _, dt := range []DType{Int8Type, Uint8Type, Int16Type, Uint16Type, Int32Type, Uint32Type, Int64Type, Uint64Type} {
		size := dt.Size()
		signed := dt == Int8Type || dt == Int16Type || dt == Int32Type || dt == Int64Type
		const n = 4096
		a, b, got := AlignedBytes(n*size), AlignedBytes(n*size), AlignedBytes(n*size)
		for i := range n * size {
			a[i], b[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		// The extremes, in the first elements.
		for i := range size {
			a[i], b[i] = 0xFF, 0x00 // -1 (or max) and 0
			a[size+i], b[size+i] = 0xFF, 0xFF
		}
		read := func(buf []byte, i int) uint64 {
			var v uint64
			for k := range size {
				v |= uint64(buf[i*size+k]) << (8 * k)
			}
			return v
		}
		signExt := func(v uint64) int64 { return int64(v<<(64-8*size)) >> (64 - 8*size) }
		mask := uint64(1)<<(8*size) - 1
		if size == 8 {
			mask = ^uint64(0)
		}
		for _, node := range []RedOp{Sum, Max, Min} {
			// An unaligned part first (the vector kernels' blocks and the
			// Go tail), then the whole, checked below; the part must
			// equal the whole's elements.
			part := AlignedBytes(n * size)
			lo, hi := size, (n-3)*size
			Combine(dt, node, part[lo:hi], a[lo:hi], b[lo:hi])
			Combine(dt, node, got, a, b)
			if !bytes.Equal(part[lo:hi], got[lo:hi]) {
				t.Errorf("%v %v: an unaligned part differs from the whole's elements", dt, node)
			}
			for i := range n {
				x, y, g := read(a, i), read(b, i), read(got, i)
				var want uint64
				switch {
				case node == Sum:
					want = (x + y) & mask
				case signed && (signExt(x) > signExt(y)) == (node == Max):
					want = x
				case signed:
					want = y
				case (x > y) == (node == Max):
					want = x
				default:
					want = y
				}
				if g != want {
					t.Fatalf("%v %v(%#x, %#x) = %#x, want %#x", dt, node, x, y, g, want)
				}
			}
		}
	}
}

// TestAverage16AllValues: Avg's division of every bfloat16 and float16 by
// W = 1..8, against the division in float64 rounded once from there.
func TestAverage16AllValues(t *testing.T) {
	for w := 1; w <= 8; w++ {
		bf, f := AlignedBytes(1<<17), AlignedBytes(1<<17)
		for i := range 1 << 16 {
			binary.LittleEndian.PutUint16(bf[2*i:], uint16(i))
			binary.LittleEndian.PutUint16(f[2*i:], uint16(i))
		}
		Average(BFloat16Type, bf, w)
		Average(Float16Type, f, w)
		for i := range 1 << 16 {
			if got, want := AsBFloat16s(bf)[i], BFloat16FromFloat64(BFloat16(i).Float64()/float64(w)); got != want {
				t.Fatalf("bfloat16 %#04x / %d = %#04x, want %#04x", i, w, got, want)
			}
			if got, want := AsFloat16s(f)[i], Float16FromFloat64(Float16(i).Float64()/float64(w)); got != want {
				t.Fatalf("float16 %#04x / %d = %#04x, want %#04x", i, w, got, want)
			}
		}
	}
}

// TestPreMultiply: products rounded once, against the exact product
// (float64 holds it for the 16-bit types; math/big for float32 would too,
// float64's own product is exact there) rounded once; random operands
// and the specials of each type.
func TestPreMultiply(t *testing.T) {
	rng := testseed.Rand(t)
	const n = 1 << 16
	for _, dt := range []DType{BFloat16Type, Float16Type, Float32Type, Float64Type} {
		src, dst := AlignedBytes(n*dt.Size()), AlignedBytes(n*dt.Size())
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		for range 16 {
			scalar := AlignedBytes(dt.Size())
			for i := range scalar {
				scalar[i] = byte(rng.Uint32())
			}
			PreMultiply(dt, dst, src, scalar)
			for i := range n {
				var got, want uint64
				switch dt {
				case BFloat16Type:
					got, want = uint64(AsBFloat16s(dst)[i]), uint64(BFloat16FromFloat64(AsBFloat16s(src)[i].Float64()*AsBFloat16s(scalar)[0].Float64()))
				case Float16Type:
					got, want = uint64(AsFloat16s(dst)[i]), uint64(Float16FromFloat64(AsFloat16s(src)[i].Float64()*AsFloat16s(scalar)[0].Float64()))
				case Float32Type:
					p := float32(float64(AsFloat32s(src)[i]) * float64(AsFloat32s(scalar)[0]))
					if p != p {
						p = math.Float32frombits(CanonicalNaNFloat32)
					}
					got, want = uint64(math.Float32bits(AsFloat32s(dst)[i])), uint64(math.Float32bits(p))
				case Float64Type:
					p := AsFloat64s(src)[i] * AsFloat64s(scalar)[0]
					if p != p {
						p = math.Float64frombits(CanonicalNaNFloat64)
					}
					got, want = math.Float64bits(AsFloat64s(dst)[i]), math.Float64bits(p)
				}
				if got != want {
					t.Fatalf("%v element %d times the scalar %x: %#x, want %#x", dt, i, scalar, got, want)
				}
			}
		}
	}
}

// TestRedOpSupports: which types each operator takes.
func TestRedOpSupports(t *testing.T) {
	for _, o := range RedOps() {
		for dt := BFloat16Type; dt < numDTypes; dt++ {
			want := dt.Reducible() || (dt.Integer() && o != PreMulSum)
			if o.Supports(dt) != want {
				t.Errorf("%v.Supports(%v) = %v", o, dt, !want)
			}
		}
		if p, err := ParseRedOp(o.String()); err != nil || p != o {
			t.Errorf("ParseRedOp(%q) = %v, %v", o, p, err)
		}
	}
	if RedOp(99).Supports(Float32Type) || RedOp(99).Valid() {
		t.Error("an unknown operator is supported")
	}
}

// TestAverageIntegers: the wrapped sum divided by W, truncated toward
// zero, in every integer type, against int64 and uint64 division.
func TestAverageIntegers(t *testing.T) {
	rng := testseed.Rand(t)
	for _, dt := range []DType{Int8Type, Uint8Type, Int16Type, Uint16Type, Int32Type, Uint32Type, Int64Type, Uint64Type} {
		size := dt.Size()
		signed := dt == Int8Type || dt == Int16Type || dt == Int32Type || dt == Int64Type
		const n = 1024
		b := AlignedBytes(n * size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		orig := append([]byte(nil), b...)
		for _, w := range []int{1, 2, 3, 4, 5, 7, 8, 127, 128, 129, 200, 255, 256, 1000, 32768, 65536, 1 << 20} { // past every narrow type's range too
			copy(b, orig)
			Average(dt, b, w)
			for i := range n {
				var x, got uint64
				for k := range size {
					x |= uint64(orig[i*size+k]) << (8 * k)
					got |= uint64(b[i*size+k]) << (8 * k)
				}
				shift := 64 - 8*size
				want := x / uint64(w)
				if signed {
					want = uint64((int64(x<<shift) >> shift) / int64(w))
				}
				if size < 8 {
					want &= 1<<(8*size) - 1
				}
				if got != want {
					t.Fatalf("%v %#x / %d = %#x, want %#x", dt, x, w, got, want)
				}
			}
		}
	}
}

// TestMaxMinWideSlices: Max and Min of float32 and float64 slices of every
// length to 70 at unaligned offsets (the vector kernels' blocks and their
// Go tails), on random bit patterns mixed with the special values,
// against float comparisons in Go (NaN canonical, -0 below +0), with the
// bytes around the output left alone.
func TestMaxMinWideSlices(t *testing.T) {
	r := testseed.Rand(t)
	specials32 := []uint32{0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 1, 0x80000001, 0x3F800000, 0xBF800000}
	specials64 := []uint64{0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001, 1, 1<<63 | 1, 0x3FF0000000000000}
	for _, node := range []RedOp{Max, Min} {
		for n := 0; n <= 70; n++ {
			for _, off := range []int{0, 1, 3} {
				a32, b32 := make([]uint32, n+off), make([]uint32, n+off)
				a64, b64 := make([]uint64, n+off), make([]uint64, n+off)
				for i := range a32 {
					a32[i], b32[i] = r.Uint32(), r.Uint32()
					a64[i], b64[i] = r.Uint64(), r.Uint64()
					if r.IntN(3) == 0 {
						a32[i], b64[i] = specials32[r.IntN(len(specials32))], specials64[r.IntN(len(specials64))]
					}
					if r.IntN(3) == 0 {
						b32[i], a64[i] = specials32[r.IntN(len(specials32))], specials64[r.IntN(len(specials64))]
					}
					if r.IntN(8) == 0 {
						b32[i], b64[i] = a32[i], a64[i]
					}
				}
				got32 := make([]uint32, n+off+2)
				got64 := make([]uint64, n+off+2)
				for i := range got32 {
					got32[i], got64[i] = 0xDEADBEEF, 0xDEADBEEFDEADBEEF
				}
				Combine(Float32Type, node, bytesOf(got32[1+off:1+off+n]), bytesOf(a32[off:]), bytesOf(b32[off:]))
				Combine(Float64Type, node, bytesOf(got64[1+off:1+off+n]), bytesOf(a64[off:]), bytesOf(b64[off:]))
				if got32[off] != 0xDEADBEEF || got32[1+off+n] != 0xDEADBEEF || got64[off] != 0xDEADBEEFDEADBEEF || got64[1+off+n] != 0xDEADBEEFDEADBEEF {
					t.Fatalf("%v n=%d off=%d: wrote outside the output", node, n, off)
				}
				for i := range n {
					x, y := math.Float32frombits(a32[off+i]), math.Float32frombits(b32[off+i])
					if want := refExtremum(node, float64(x), float64(y)); !sameFloat32(got32[1+off+i], want) {
						t.Errorf("float32 %v(%#08x, %#08x) = %#08x, want %v", node, a32[off+i], b32[off+i], got32[1+off+i], want)
					}
					u, v := math.Float64frombits(a64[off+i]), math.Float64frombits(b64[off+i])
					if want := refExtremum(node, u, v); !sameFloat64(got64[1+off+i], want) {
						t.Errorf("float64 %v(%#016x, %#016x) = %#016x, want %v", node, a64[off+i], b64[off+i], got64[1+off+i], want)
					}
				}
			}
		}
	}
}

// refExtremum is Max or Min by float comparison: NaN if either is, -0
// below +0.
func refExtremum(node RedOp, x, y float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x == y && x == 0:
		if (node == Max) == math.Signbit(x) {
			return y // max takes the +0, min the -0: x is the other one
		}
		return x
	case (x > y) == (node == Max):
		return x
	}
	return y
}

func sameFloat32(got uint32, want float64) bool {
	if math.IsNaN(want) {
		return got == CanonicalNaNFloat32
	}
	return got == math.Float32bits(float32(want))
}

func sameFloat64(got uint64, want float64) bool {
	if math.IsNaN(want) {
		return got == CanonicalNaNFloat64
	}
	return got == math.Float64bits(want)
}

func bytesOf[T uint32 | uint64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// TestScaleWideSlices: Average and PreMultiply of every float type's
// slices of every length to 70 at unaligned offsets (the vector
// kernels' blocks and their Go tails), on random bit patterns mixed with
// special values, against float64 arithmetic rounded once (NaN
// canonical), with the elements around the output left alone.
func TestScaleWideSlices(t *testing.T) {
	r := testseed.Rand(t)
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1, -1, 3, 1e-40, -1e-310, 3.4e38, 1.7e308}
	for _, dt := range []DType{BFloat16Type, Float16Type, Float32Type, Float64Type} {
		size := dt.Size()
		for n := 0; n <= 70; n++ {
			for _, off := range []int{0, 1, 3} {
				src := AlignedBytes((n + off + 2) * size)
				for i := range src {
					src[i] = byte(r.Uint32())
				}
				for i := range n + off + 2 {
					if r.IntN(4) == 0 {
						copy(src[i*size:], encode(dt, specials[r.IntN(len(specials))]))
					}
				}
				in := src[(1+off)*size : (1+off+n)*size]
				w := 2 + r.IntN(7)
				k := encode(dt, r.NormFloat64()*4)
				// Average in place; PreMultiply into a guarded copy.
				avg := bytes.Clone(src)
				Average(dt, avg[(1+off)*size:(1+off+n)*size], w)
				pm := bytes.Clone(src)
				PreMultiply(dt, pm[(1+off)*size:(1+off+n)*size], in, k)
				for _, out := range [][]byte{avg, pm} {
					if !bytes.Equal(out[:(1+off)*size], src[:(1+off)*size]) || !bytes.Equal(out[(1+off+n)*size:], src[(1+off+n)*size:]) {
						t.Fatalf("%v n=%d off=%d: wrote outside the output", dt, n, off)
					}
				}
				for i := range n {
					x := decode(dt, in[i*size:])
					if got, want := avg[(1+off+i)*size:(2+off+i)*size], encode(dt, x/float64(w)); !bytes.Equal(got, want) {
						t.Errorf("%v %v / %d = %x, want %x", dt, x, w, got, want)
					}
					if got, want := pm[(1+off+i)*size:(2+off+i)*size], encode(dt, x*decode(dt, k)); !bytes.Equal(got, want) {
						t.Errorf("%v %v * %v = %x, want %x", dt, x, decode(dt, k), got, want)
					}
				}
			}
		}
	}
}

// decode is one element of dt as a float64 (exact).
func decode(dt DType, b []byte) float64 {
	switch dt {
	case BFloat16Type:
		return BFloat16(binary.LittleEndian.Uint16(b)).Float64()
	case Float16Type:
		return Float16(binary.LittleEndian.Uint16(b)).Float64()
	case Float32Type:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}
