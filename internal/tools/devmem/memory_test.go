package devmem

import (
	"bytes"
	"strings"
	"testing"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/gputest"
)

// TestMemoryGPU: device buffers read back what was written, hold guard
// bytes until then, and report a changed guard byte, before or after the
// buffer and through a Slice, as check.Guarded does on the host.
func TestMemoryGPU(t *testing.T) {
	have, err := Count()
	if err != nil {
		gputest.Missing(t, "cuda: no CUDA driver: %v", err)
		return
	}
	gputest.Need(t, 1, have, nil)
	g, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	m := NewMemory(0)
	defer m.Arena.Free()

	want := check.Input(1, 1, 0, 100, detcoll.TypeFloat32)
	b, err := m.Alloc(len(want), 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := check.Expect(detcoll.TypeUint8, b, bytes.Repeat([]byte{check.GuardByte}, len(want))); err != nil {
		t.Errorf("a new buffer: %v; want guard bytes throughout", err)
	}
	if err := b.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := check.Expect(detcoll.TypeFloat32, b, want); err != nil {
		t.Errorf("after Write: %v", err)
	}
	if err := check.Expect(detcoll.TypeFloat32, b.Slice(8, 16), want[8:16]); err != nil {
		t.Errorf("a Slice: %v", err)
	}
	d := b.(*Buffer)
	for _, at := range []int{d.lo - 1, d.hi} {
		if err := Put(d.base+driver.DevicePtr(at), []byte{0}); err != nil {
			t.Fatal(err)
		}
		err := check.Expect(detcoll.TypeFloat32, b.Slice(0, 4), want[:4])
		if err == nil || !strings.Contains(err.Error(), "guard byte") {
			t.Errorf("guard byte %d changed: Expect = %v; want the guard named", at, err)
		}
		Put(d.base+driver.DevicePtr(at), []byte{check.GuardByte})
	}
	m.Reset()
	again, err := m.Alloc(len(want), 4)
	if err != nil {
		t.Fatal(err)
	}
	if again.(*Buffer).base != d.base {
		t.Errorf("after Reset the arena handed out %#x, not its first buffer %#x again", again.(*Buffer).base, d.base)
	}
}
