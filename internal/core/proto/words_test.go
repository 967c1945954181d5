package proto

import (
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
)

// TestSignatureRoundTrip: every field survives its words, Registered
// included, and a registered call's words differ from the same call's
// unregistered ones (ranks that differ in it find a mismatch).
func TestSignatureRoundTrip(t *testing.T) {
	s := base.Signature{Op: base.OpAllReduce, Red: num.Max, DType: num.BFloat16Type, Count: 1 << 33, Root: 3,
		Buffers: 1, Layout: 0xfeed, Seq: 1<<63 + 5, Registered: true}
	w := EncodeSignature(s)
	if got := DecodeSignature(w); got != s {
		t.Fatalf("round trip: got %+v, want %+v", got, s)
	}
	u := s
	u.Registered = false
	if EncodeSignature(u) == w {
		t.Fatal("a registered call's signature equals the unregistered call's")
	}
	if got := DecodeSignature(EncodeSignature(u)); got != u {
		t.Fatalf("round trip: got %+v, want %+v", got, u)
	}
}
