package verify

import "testing"

// TestDeviceOps checks that every host operation has a device form (the
// GPU run would panic otherwise) and what the device-only rows expect.
func TestDeviceOps(t *testing.T) {
	ops := deviceOps(append(append([]operation(nil), reduceOps...), gatherOps...), windowOp)
	if got, want := len(ops), len(reduceOps)+len(gatherOps)+1; got != want {
		t.Fatalf("%d device operations; want %d", got, want)
	}
	for _, op := range append(ops, crossOps()...) {
		if op.call == nil || op.want == nil || op.outBytes == nil || op.inScale == nil {
			t.Errorf("%s: incomplete device operation", op.name)
		}
	}
	if got := windowOp.outBytes(2, 10, 2); got != 8 {
		t.Errorf("window of 5 two-byte elements: %d output bytes; want 8", got)
	}
	if got := windowOp.outBytes(2, 0, 2); got != 0 {
		t.Errorf("window of nothing: %d output bytes; want 0", got)
	}
}

func TestNestable(t *testing.T) {
	for w, want := range map[int]bool{0: false, 1: true, 2: true, 3: false, 4: true, 6: false, 8: true, 16: false} {
		if got := Nestable(w); got != want {
			t.Errorf("Nestable(%d) = %v; want %v", w, got, want)
		}
	}
}
