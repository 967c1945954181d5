//go:build cgo && linux

package dl

import (
	"strings"
	"testing"
)

// TestOpenSymClose: libc opens, a symbol of it resolves and one it lacks
// does not; a library that is not there says so.
func TestOpenSymClose(t *testing.T) {
	h, err := Open("libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	defer Close(h)
	if p, err := Sym(h, "libc.so.6", "getpid"); err != nil || p == nil {
		t.Errorf("Sym getpid = %v, %v; want its address", p, err)
	}
	if _, err := Sym(h, "libc.so.6", "dc_no_such_symbol"); err == nil || !strings.Contains(err.Error(), "dc_no_such_symbol in libc.so.6") {
		t.Errorf("Sym of a missing symbol: %v; want an error naming it and the library", err)
	}
	if _, err := Open("libdc-not-there.so"); err == nil || !strings.Contains(err.Error(), "libdc-not-there.so") {
		t.Errorf("Open of a missing library: %v; want an error naming it", err)
	}
}
