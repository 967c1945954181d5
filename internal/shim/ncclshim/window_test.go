package ncclshim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/detcoll/detcoll"
)

// TestWindows: a window the real NCCL made is registered with detcoll too,
// by its memory, and given back by NCCL's window; one made inside a group,
// one detcoll refuses (memory that does not share over IPC), and one of an
// unknown communicator stay NCCL's alone, and their deregistration asks
// nothing of detcoll.
func TestWindows(t *testing.T) {
	sh, fc := servedShim(t, 2, 0, testSettings())
	sh.WindowRegister(1, 0x100000, 4096, 0xa1, 0)
	sh.WindowRegister(1, 0x200000, 8192, 0xa2, 7) // inside a group
	sh.WindowRegister(9, 0x300000, 4096, 0xa3, 0) // no such communicator
	fc.fail = fmt.Errorf("%w: cuMemCreate memory", detcoll.ErrUnavailable)
	sh.WindowRegister(1, 0x400000, 4096, 0xa4, 0)
	for _, win := range []uintptr{0xa4, 0xa3, 0xa2, 0xa1, 0xa1} {
		sh.WindowDeregister(1, win)
	}
	want := []string{"register 0x100000 4096", "register 0x400000 4096", "deregister 0x100000"}
	if got := fc.log(); !slices.Equal(got, want) {
		t.Errorf("detcoll saw %q; want %q", got, want)
	}
	// Close gives back what is left: the shim forgets it.
	sh.WindowRegister(1, 0x500000, 4096, 0xa5, 0)
	sh.Destroy(1)
	if c := sh.lookup(1); c != nil {
		t.Fatal("destroyed communicator still known")
	}
	if got := fc.log(); got[len(got)-1] != "close" {
		t.Errorf("detcoll saw %q last; want close", got[len(got)-1])
	}
}
