package cuda

import (
	"testing"
	"unsafe"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// TestRailArgsLayout: railArgs has treesum.cu's RailArgs layout (the
// signature's words, two addresses, the hosts and a pad), and the
// signature's sequence is its last word, which dc_rail_sign draws.
func TestRailArgsLayout(t *testing.T) {
	var a railArgs
	if got, want := unsafe.Sizeof(a), uintptr(8*proto.SignatureWords+8+8+4+4); got != want {
		t.Errorf("railArgs is %d bytes, want %d", got, want)
	}
	if got, want := unsafe.Offsetof(a.Dev), uintptr(8*proto.SignatureWords); got != want {
		t.Errorf("railArgs.Dev at %d, want %d", got, want)
	}
	if got, want := unsafe.Offsetof(a.Hosts), uintptr(8*proto.SignatureWords+16); got != want {
		t.Errorf("railArgs.Hosts at %d, want %d", got, want)
	}
	w := proto.EncodeSignature(base.Signature{Seq: 0x5e})
	if w[proto.SignatureWords-1] != 0x5e {
		t.Errorf("the sequence is not the signature's last word: %x", w)
	}
	if railAll < railMine+railSigBytes || railRecSigs < railOp+8 {
		t.Errorf("the rail's offsets overlap: mine %d all %d (%d bytes a signature); op %d sigs %d", railMine, railAll, railSigBytes, railOp, railRecSigs)
	}
}
