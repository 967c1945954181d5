// Package check holds what the tests and detcoll verify use to check
// results bit for bit: seeded inputs that mix ordinary values with
// special ones, the reference evaluation of the tree element by element
// with the scalar adds, outputs with guard bytes, and calls of the typed
// API from raw bytes.
package check

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"unsafe"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/num"
	"github.com/detcoll/detcoll/internal/tree"
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

func PutBits(b []byte, size int, bits uint64) {
	for j := range size {
		b[j] = byte(bits >> (8 * j))
	}
}

func GetBits(b []byte, size int) uint64 {
	var v uint64
	for j := range size {
		v |= uint64(b[j]) << (8 * j)
	}
	return v
}

// ReferenceSum evaluates the tree element by element with the scalar adds:
// the independent reference every backend's output is compared with.
func ReferenceSum(dt detcoll.DType, ins [][]byte) []byte {
	size := dt.Size()
	out := make([]byte, len(ins[0]))
	leaves := make([]uint64, len(ins))
	add := ScalarAdd(dt)
	negZero := uint64(1) << (8*size - 1)
	for i := 0; i < len(out); i += size {
		for p := range ins {
			leaves[p] = GetBits(ins[p][i:], size)
		}
		v := tree.Eval(leaves, add)
		if len(leaves) == 1 {
			// T over one leaf is a copy whose NaNs are canonical: in IEEE
			// terms x + (-0), which is x for every x but NaN (-0 + -0 is
			// -0), and the scalar add makes a NaN canonical. Written so,
			// the reference does not share the backends' canonicalisation.
			v = add(v, negZero)
		}
		PutBits(out[i:], size, v)
	}
	return out
}

func ScalarAdd(dt detcoll.DType) func(a, b uint64) uint64 {
	switch dt {
	case detcoll.TypeBFloat16:
		return func(a, b uint64) uint64 { return uint64(num.AddBFloat16(num.BFloat16(a), num.BFloat16(b))) }
	case detcoll.TypeFloat16:
		return func(a, b uint64) uint64 { return uint64(num.AddFloat16(num.Float16(a), num.Float16(b))) }
	case detcoll.TypeFloat32:
		return func(a, b uint64) uint64 {
			return uint64(math.Float32bits(num.AddFloat32(math.Float32frombits(uint32(a)), math.Float32frombits(uint32(b)))))
		}
	case detcoll.TypeFloat64:
		return func(a, b uint64) uint64 {
			return math.Float64bits(num.AddFloat64(math.Float64frombits(a), math.Float64frombits(b)))
		}
	}
	panic("not a float type: " + dt.String())
}

// Guarded is an output buffer with guard bytes before and after it, at a
// chosen offset from an aligned start so outputs are also tested
// misaligned.
type Guarded struct {
	all       []byte
	lo, hi    int
	guardByte byte
}

const GuardLen = 64

func NewGuarded(n, offset int) *Guarded {
	g := &Guarded{all: make([]byte, GuardLen+offset+n+GuardLen), guardByte: 0xA5}
	g.lo, g.hi = GuardLen+offset, GuardLen+offset+n
	for i := range g.all {
		g.all[i] = g.guardByte
	}
	return g
}

func (g *Guarded) Bytes() []byte { return g.all[g.lo:g.hi:g.hi] }

// Check reports a guard byte that changed.
func (g *Guarded) Check() error {
	for i, b := range g.all {
		if (i < g.lo || i >= g.hi) && b != g.guardByte {
			return fmt.Errorf("guard byte %d (output is [%d, %d)) changed to %#x", i, g.lo, g.hi, b)
		}
	}
	return nil
}

// Holds reports whether the output holds want, bit for bit, with its
// guard bytes intact.
func (g *Guarded) Holds(dt detcoll.DType, want []byte) error {
	if err := FirstDiff(dt, g.Bytes(), want); err != nil {
		return err
	}
	return g.Check()
}

// Typed views raw test bytes as the element type T. The test buffers are
// 8-byte aligned plus an offset that is a multiple of the element size.
func Typed[T detcoll.Element](b []byte) []T {
	var zero T
	if len(b) == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(zero)))
}

// FirstDiff describes the first element where got and want differ.
func FirstDiff(dt detcoll.DType, got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	if len(got) != len(want) {
		return fmt.Errorf("got %d bytes, want %d", len(got), len(want))
	}
	size := dt.Size()
	for i := 0; i < len(got); i += size {
		if !bytes.Equal(got[i:i+size], want[i:i+size]) {
			return fmt.Errorf("element %d of %d: got %#x, want %#x", i/size, len(got)/size, GetBits(got[i:], size), GetBits(want[i:], size))
		}
	}
	return nil
}

// RawBytes views a Typed slice as its bytes.
func RawBytes[T detcoll.Element](s []T) []byte {
	var zero T
	if len(s) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
}

// ReduceCase is one size of a reduction check: every rank's inputs and the
// sums this rank must get, for an all-reduce of n elements and for a
// reduce-scatter of W*n.
type ReduceCase struct {
	Ins, ScatterIns [][]byte // by rank
	Want            []byte   // the all-reduce's result
	ScatterWant     []byte   // this rank's share of the reduce-scatter's
}

// NewReduceCase makes the case for rank of w at n elements of dt; calls
// numbers the inputs (two per case).
func NewReduceCase(seed uint64, call, w, rank, n int, dt detcoll.DType) ReduceCase {
	var rc ReduceCase
	for p := range w {
		rc.Ins = append(rc.Ins, Input(seed, call, p, n, dt))
		rc.ScatterIns = append(rc.ScatterIns, Input(seed, call+1, p, w*n, dt))
	}
	rc.Want = ReferenceSum(dt, rc.Ins)
	k := n * dt.Size()
	shares := make([][]byte, w)
	for p, in := range rc.ScatterIns {
		shares[p] = in[rank*k : (rank+1)*k]
	}
	rc.ScatterWant = ReferenceSum(dt, shares)
	return rc
}
