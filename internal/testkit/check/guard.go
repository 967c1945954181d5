package check

import (
	"bytes"
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
)

// GuardLen guard bytes lie before and after every checked buffer, host or
// device; each holds GuardByte, and so does a buffer until it is written,
// so that an output a call never wrote cannot pass for one it did.
const (
	GuardLen  = 64
	GuardByte = 0xA5
)

// Guards checks the guard bytes of all, a buffer's allocation whose data
// is [lo, hi): every byte outside it must still be GuardByte.
func Guards(all []byte, lo, hi int) error {
	for i, b := range all {
		if (i < lo || i >= hi) && b != GuardByte {
			return fmt.Errorf("guard byte %d (the buffer is [%d, %d)) changed to %#x", i, lo, hi, b)
		}
	}
	return nil
}

// Expect reads out and compares it with want, bit for bit in elements of
// dt, then checks its guard bytes: the one comparison of every check.
func Expect(dt detcoll.DType, out Buffer, want []byte) error {
	got, guardErr := out.Read()
	if err := FirstDiff(dt, got, want); err != nil {
		return err
	}
	return guardErr
}

// Unchanged checks that in, a call's input, still holds want and its
// guards.
func Unchanged(in Buffer, want []byte) error {
	got, err := in.Read()
	if err != nil {
		return fmt.Errorf("the input's guards: %w", err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("the call changed its input: %w", FirstDiff(detcoll.TypeUint8, got, want))
	}
	return nil
}

// Guarded is a buffer in host memory with guard bytes before and after it,
// at a chosen offset from an 8-byte aligned start so that buffers are also
// tested misaligned. It is the Buffer of Host.
type Guarded struct {
	all    []byte
	lo, hi int // the buffer within all
	// vlo, vhi are this view within all: the buffer, or a Slice of it.
	vlo, vhi int
}

// NewGuarded returns n bytes at offset bytes past an aligned start, every
// byte GuardByte.
func NewGuarded(n, offset int) *Guarded {
	g := &Guarded{all: num.AlignedBytes(GuardLen + offset + n + GuardLen)}
	g.lo, g.hi = GuardLen+offset, GuardLen+offset+n
	g.vlo, g.vhi = g.lo, g.hi
	for i := range g.all {
		g.all[i] = GuardByte
	}
	return g
}

// Bytes returns the view's bytes, in place.
func (g *Guarded) Bytes() []byte { return g.all[g.vlo:g.vhi:g.vhi] }

// Check reports a guard byte that changed.
func (g *Guarded) Check() error { return Guards(g.all, g.lo, g.hi) }

// Len returns the view's length.
func (g *Guarded) Len() int { return g.vhi - g.vlo }

// Write copies b to the start of the view.
func (g *Guarded) Write(b []byte) error {
	if len(b) > g.Len() {
		return fmt.Errorf("write of %d bytes into a buffer of %d", len(b), g.Len())
	}
	copy(g.Bytes(), b)
	return nil
}

// Read returns a copy of the view's bytes and reports a changed guard.
func (g *Guarded) Read() ([]byte, error) { return bytes.Clone(g.Bytes()), g.Check() }

// Slice returns bytes [lo, hi) of the view, in place.
func (g *Guarded) Slice(lo, hi int) Buffer {
	if lo < 0 || hi < lo || hi > g.Len() {
		panic(fmt.Sprintf("check: Slice(%d, %d) of a buffer of %d bytes", lo, hi, g.Len()))
	}
	s := *g
	s.vlo, s.vhi = g.vlo+lo, g.vlo+hi
	return &s
}
