package tree

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/testseed"
)

var reducible = []num.DType{num.BFloat16Type, num.Float16Type, num.Float32Type, num.Float64Type}

// load, store and scalarAdd read and write one element of a dtype as raw
// bits, and add two with num's scalar add: the reference the Reducer is held
// to.
func load(dt num.DType, b []byte, i int) uint64 {
	switch dt.Size() {
	case 2:
		return uint64(binary.NativeEndian.Uint16(b[2*i:]))
	case 4:
		return uint64(binary.NativeEndian.Uint32(b[4*i:]))
	}
	return binary.NativeEndian.Uint64(b[8*i:])
}

func store(dt num.DType, b []byte, i int, v uint64) {
	switch dt.Size() {
	case 2:
		binary.NativeEndian.PutUint16(b[2*i:], uint16(v))
	case 4:
		binary.NativeEndian.PutUint32(b[4*i:], uint32(v))
	default:
		binary.NativeEndian.PutUint64(b[8*i:], v)
	}
}

func scalarAdd(dt num.DType) func(a, b uint64) uint64 {
	switch dt {
	case num.BFloat16Type:
		return func(a, b uint64) uint64 { return uint64(num.AddBFloat16(num.BFloat16(a), num.BFloat16(b))) }
	case num.Float16Type:
		return func(a, b uint64) uint64 { return uint64(num.AddFloat16(num.Float16(a), num.Float16(b))) }
	case num.Float32Type:
		return func(a, b uint64) uint64 {
			return uint64(math.Float32bits(num.AddFloat32(math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b)))))
		}
	case num.Float64Type:
		return func(a, b uint64) uint64 {
			return math.Float64bits(num.AddFloat64(math.Float64frombits(a), math.Float64frombits(b)))
		}
	}
	panic(dt)
}

// randElem returns random bits for dt, biased towards what makes adds
// interesting: specials (±0, ±Inf, NaNs with payloads, subnormals, the
// largest finite), values near 1 so that neighbouring leaves cancel and
// round, and otherwise any bit pattern.
func randElem(r *rand.Rand, dt num.DType) uint64 {
	bitsN := 8 * dt.Size()
	ebits := map[num.DType]int{num.BFloat16Type: 8, num.Float16Type: 5, num.Float32Type: 8, num.Float64Type: 11}[dt]
	mbits := bitsN - 1 - ebits
	sign := uint64(r.IntN(2)) << (bitsN - 1)
	expAll := uint64(1<<ebits-1) << mbits
	switch r.IntN(8) {
	case 0: // special
		specials := []uint64{0, 1, 1<<mbits - 1, 1 << mbits, expAll - 1, expAll, expAll | 1, expAll | 1<<(mbits-1), expAll | 1<<mbits - 1}
		return sign | specials[r.IntN(len(specials))]
	case 1, 2, 3, 4: // exponent within a few of 1's
		e := uint64(1<<(ebits-1) - 1 + r.IntN(7) - 3)
		return sign | e<<mbits | r.Uint64()&(1<<mbits-1)
	default:
		return r.Uint64() & (1<<bitsN - 1) // a shift by 64 gives 0, so all ones
	}
}

// reference computes T elementwise with Eval and num's scalar adds.
func reference(dt num.DType, srcs [][]byte) []byte {
	n := len(srcs[0]) / dt.Size()
	out := make([]byte, len(srcs[0]))
	add := scalarAdd(dt)
	leaves := make([]uint64, len(srcs))
	for i := range n {
		for j, s := range srcs {
			leaves[j] = load(dt, s, i)
		}
		v := Eval(leaves, add)
		if len(leaves) == 1 {
			// One leaf: x + (-0), which is x but for a NaN, made canonical
			// by the scalar add (see check.ReferenceSum).
			v = add(v, 1<<(8*dt.Size()-1))
		}
		store(dt, out, i, v)
	}
	return out
}

// TestReduce checks Reducer.Reduce against the reference, bit for bit, for
// W = 1..9, every reducible dtype, lengths around the chunk size, with dst
// separate and dst the very same memory as each src in turn. One Reducer is
// reused throughout, as the backend does. Guard bytes after dst must survive.
func TestReduce(t *testing.T) {
	r := testseed.Rand(t)
	var red Reducer
	for _, dt := range reducible {
		chunk := chunkBytes / dt.Size()
		for _, n := range []int{0, 1, 7, chunk - 1, chunk, chunk + 1, 3*chunk + 5} {
			for w := 1; w <= 9; w++ {
				srcs := make([][]byte, w)
				for j := range srcs {
					srcs[j] = num.AlignedBytes(n * dt.Size())
					for i := range n {
						store(dt, srcs[j], i, randElem(r, dt))
					}
				}
				want := reference(dt, srcs)
				for alias := -1; alias < w; alias++ {
					name := fmt.Sprintf("%s W=%d n=%d dst=", dt, w, n)
					ins := make([][]byte, w)
					for j := range srcs {
						ins[j] = append(num.AlignedBytes(len(srcs[j]) + 8)[:0], srcs[j]...)
					}
					var dst []byte
					if alias < 0 {
						name += "separate"
						dst = num.AlignedBytes(len(want) + 8)[:len(want)]
					} else {
						name += fmt.Sprintf("src%d", alias)
						dst = ins[alias]
					}
					guard := dst[len(dst) : len(dst)+8]
					copy(guard, "GUARDGRD")
					red.Reduce(dt, num.Sum, dst, ins)
					if !bytes.Equal(dst, want) {
						i := firstDiff(dst, want) / dt.Size()
						leaves := make([]string, w)
						for j := range srcs {
							leaves[j] = fmt.Sprintf("%#x", load(dt, srcs[j], i))
						}
						t.Fatalf("%s: element %d = %#x; want %#x (leaves %v)", name, i, load(dt, dst, i), load(dt, want, i), leaves)
					}
					if string(guard) != "GUARDGRD" {
						t.Fatalf("%s: wrote past dst: %q", name, guard)
					}
					for j := range srcs {
						if j != alias && !bytes.Equal(ins[j], srcs[j]) {
							t.Fatalf("%s: src%d changed", name, j)
						}
					}
				}
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestReduceIsTree tells T from a left fold: in float32, (1e20+1)+(-1e20+1)
// is 0 while ((1e20+1)-1e20)+1 is 1.
func TestReduceIsTree(t *testing.T) {
	leaves := []float32{1e20, 1, -1e20, 1}
	srcs := make([][]byte, len(leaves))
	for i, v := range leaves {
		srcs[i] = num.AlignedBytes(4)
		num.AsFloat32s(srcs[i])[0] = v
	}
	dst := num.AlignedBytes(4)
	var red Reducer
	red.Reduce(num.Float32Type, num.Sum, dst, srcs)
	fold := leaves[0]
	for _, v := range leaves[1:] {
		fold = num.AddFloat32(fold, v)
	}
	if got := num.AsFloat32s(dst)[0]; got != 0 || fold != 1 {
		t.Errorf("Reduce(%v) = %g (left fold %g); want 0 (left fold 1)", leaves, got, fold)
	}
	if got := Eval(leaves, num.AddFloat32); got != 0 {
		t.Errorf("Eval(%v) = %g; want 0", leaves, got)
	}
}

// TestNesting checks the contract's tensor-parallel invariance: 8 leaves; for
// k in {1, 2, 4, 8}, rank r of k holds T over its contiguous block of 8/k
// leaves, and T over the k ranks equals T over the 8 leaves bit for bit,
// for every dtype, computed by Reducer.
func TestNesting(t *testing.T) {
	r := testseed.Rand(t)
	var red Reducer
	const n = 1000
	for _, dt := range reducible {
		leaves := make([][]byte, 8)
		for j := range leaves {
			leaves[j] = num.AlignedBytes(n * dt.Size())
			for i := range n {
				store(dt, leaves[j], i, randElem(r, dt))
			}
		}
		want := num.AlignedBytes(n * dt.Size())
		red.Reduce(dt, num.Sum, want, leaves)
		for _, k := range []int{1, 2, 4, 8} {
			ranks := make([][]byte, k)
			for rk := range ranks {
				ranks[rk] = num.AlignedBytes(n * dt.Size())
				red.Reduce(dt, num.Sum, ranks[rk], leaves[rk*8/k:(rk+1)*8/k])
			}
			got := num.AlignedBytes(n * dt.Size())
			red.Reduce(dt, num.Sum, got, ranks)
			if !bytes.Equal(got, want) {
				i := firstDiff(got, want) / dt.Size()
				t.Errorf("%s, %d ranks: element %d = %#x; want %#x (the 8-leaf tree)", dt, k, i, load(dt, got, i), load(dt, want, i))
			}
		}
	}
}

// TestReduceAllocs checks that a warmed-up Reducer does not allocate.
func TestReduceAllocs(t *testing.T) {
	var red Reducer
	srcs := make([][]byte, 7)
	for j := range srcs {
		srcs[j] = num.AlignedBytes(3*chunkBytes + 40)
	}
	dst := num.AlignedBytes(len(srcs[0]))
	for _, dt := range reducible {
		red.Reduce(dt, num.Sum, dst, srcs)
		if a := testing.AllocsPerRun(20, func() { red.Reduce(dt, num.Sum, dst, srcs) }); a != 0 {
			t.Errorf("%s: %v allocations per Reduce; want 0", dt, a)
		}
	}
}

// TestReducePanics checks the internal-misuse panics.
func TestReducePanics(t *testing.T) {
	var red Reducer
	b := func(n int) []byte { return num.AlignedBytes(n) }
	for name, f := range map[string]func(){
		"int32 avg":    func() { red.Reduce(num.Int32Type, num.Avg, b(4), [][]byte{b(4)}) },
		"float avg":    func() { red.Reduce(num.Float32Type, num.Avg, b(4), [][]byte{b(4)}) },
		"invalid":      func() { red.Reduce(num.Invalid, num.Sum, b(4), [][]byte{b(4)}) },
		"no srcs":      func() { red.Reduce(num.Float32Type, num.Sum, b(4), nil) },
		"partial":      func() { red.Reduce(num.Float32Type, num.Sum, b(6), [][]byte{b(6), b(6)}) },
		"unequal":      func() { red.Reduce(num.Float32Type, num.Sum, b(8), [][]byte{b(8), b(4)}) },
		"misaligned":   func() { red.Reduce(num.Float64Type, num.Sum, b(24)[4:20], [][]byte{b(16), b(16)}) },
		"short dst W1": func() { red.Reduce(num.Float32Type, num.Sum, b(4), [][]byte{b(8)}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
