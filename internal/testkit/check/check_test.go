package check

import (
	"bytes"
	"strings"
	"testing"

	"github.com/detcoll/detcoll"
)

// TestExpect: the comparison of every check fails on a changed bit and on
// a changed guard byte, before and after the buffer and through a Slice.
func TestExpect(t *testing.T) {
	f32 := detcoll.TypeFloat32
	want := Input(1, 1, 0, 100, f32)
	fresh := func() *Guarded {
		g := NewGuarded(len(want), 4)
		if err := g.Write(want); err != nil {
			t.Fatal(err)
		}
		return g
	}
	if err := Expect(f32, fresh(), want); err != nil {
		t.Errorf("an untouched copy: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(g *Guarded)
		says  string
	}{
		{"bit flipped", func(g *Guarded) { g.Bytes()[42] ^= 1 }, "element 10 of 100"},
		{"guard before", func(g *Guarded) { g.all[g.lo-1] = 0 }, "guard byte 67"},
		{"guard after", func(g *Guarded) { g.all[g.hi] = 0 }, "guard byte 468"},
		{"never written", func(g *Guarded) { copy(g.Bytes(), bytes.Repeat([]byte{GuardByte}, len(want))) }, "element 0 of 100"},
	} {
		g := fresh()
		tc.spoil(g)
		err := Expect(f32, g, want)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: Expect = %v; want an error with %q", tc.name, err, tc.says)
		}
	}
	g := fresh()
	g.all[len(g.all)-1] = 0
	if err := Expect(f32, g.Slice(4, 8), want[4:8]); err == nil || !strings.Contains(err.Error(), "guard byte") {
		t.Errorf("a Slice of a buffer whose guard changed: Expect = %v; want the guard named", err)
	}
	if err := Unchanged(fresh(), want); err != nil {
		t.Errorf("Unchanged of an untouched input: %v", err)
	}
}

// TestCanonicalMatchesReference: the two independent references of a sum
// over one rank, the formats' NaN rule and the tree's x + (-0), agree on
// inputs full of NaN payloads.
func TestCanonicalMatchesReference(t *testing.T) {
	for _, dt := range FloatTypes {
		in := NaNInput(dt, 999, 7)
		_, isNaN := nanBits(dt)
		nans := 0
		for i := 0; i < len(in); i += dt.Size() {
			if isNaN(GetBits(in[i:], dt.Size())) {
				nans++
			}
		}
		if nans < 333 {
			t.Errorf("%v: %d NaNs in 999 elements; want every third at least", dt, nans)
		}
		if err := FirstDiff(dt, Canonical(dt, in), ReferenceSum(dt, [][]byte{in})); err != nil {
			t.Errorf("%v: Canonical against ReferenceSum of one leaf: %v", dt, err)
		}
	}
}
