package cuda

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"regexp"
	"testing"
	"unsafe"
)

var update = flag.Bool("update", false, "rewrite kernels/proto.h from header.go")

// TestKernelHeaderCurrent: kernels/proto.h, the readers' and nvcc's copy
// of the header the host compiles the kernels with, is what header.go
// writes. Run go generate (or this test with -update) after changing a
// shared constant.
func TestKernelHeaderCurrent(t *testing.T) {
	const path = "kernels/proto.h"
	want := kernelHeader()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go generate ./internal/backend/cuda", path)
	}
}

// TestKernelConstantsWrittenOnce: no kernel file defines a constant the
// header carries (a second copy could drift from Go's).
func TestKernelConstantsWrittenOnce(t *testing.T) {
	shared := map[string]bool{}
	for _, g := range headerGroups() {
		for _, d := range g.defs {
			if shared[d.name] {
				t.Errorf("the header defines %s twice", d.name)
			}
			shared[d.name] = true
		}
	}
	files, err := fs.Glob(kernelDir, "kernels/*")
	if err != nil || len(files) < len(kernelFiles)+2 {
		t.Fatalf("kernel files %v (%v)", files, err)
	}
	for _, name := range files {
		if name == "kernels/proto.h" {
			continue
		}
		text, err := kernelDir.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^#define (DC_\w+)`).FindAllStringSubmatch(string(text), -1) {
			if shared[m[1]] {
				t.Errorf("%s defines %s, which the generated header carries", name, m[1])
			}
		}
	}
}

// TestKernelFilesAllCompiled: every kernel file but the header is in the
// text of one kernel (a file left out of kernelFiles would be dead code
// that reads as live).
func TestKernelFilesAllCompiled(t *testing.T) {
	used := map[string]bool{"kernels/proto.h": true, "kernels/treesum.cu": true}
	for _, name := range append(append([]string(nil), sharedFiles...), kernelFiles...) {
		used["kernels/"+name] = true
	}
	files, _ := fs.Glob(kernelDir, "kernels/*")
	for _, name := range files {
		if !used[name] {
			t.Errorf("%s is in no kernel's source", name)
		}
	}
	if !bytes.Contains(kernelSource, []byte("#line 1 \"ll.h\"\n")) {
		t.Errorf("the collectives' source lacks ll.h")
	}
}

// TestLayout: the control block's arrays do not overlap, and kernelArgs is
// laid out as struct Args.
func TestLayout(t *testing.T) {
	if got := offPeers + 8*maxWorld; got > offAck {
		t.Errorf("the peer table ends at %d, past the ack array (%d)", got, offAck)
	}
	if offAck+8*maxWorld > offSent1 || offSent1+8*maxWorld > offSent2 || offSent2+8*maxWorld > offStopped ||
		offStopped+8*maxWorld > ctrlSize {
		t.Errorf("the pushed arrays overlap or leave the control block")
	}
	if offReg < offPeers+8*maxWorld || offReg+16 > offAck {
		t.Errorf("the registered call's words (%d) overlap the peer table or the acks", offReg)
	}
	// struct Args: 12 u64, 8 u32, DC_MAX_STEPS u8, then DC_MAX_WORK Works of 4 u64.
	if got, want := unsafe.Sizeof(kernelArgs{}), uintptr(12*8+8*4+maxSteps+maxWork*32); got != want {
		t.Errorf("kernelArgs is %d bytes, struct Args %d", got, want)
	}
	if got := unsafe.Offsetof(kernelArgs{}.Work); got != 136 {
		t.Errorf("kernelArgs.Work at %d, struct Args.work at 136", got)
	}
}

// TestLLAreaAligned: the LL images are whole 64-byte lines at every world
// size, so every receive slot and scratch image stays 16-byte aligned (the
// kernels' static_assert refuses anything else at compile time, on the GPU).
func TestLLAreaAligned(t *testing.T) {
	for w := 1; w <= maxWorld; w++ {
		m := defaultLLMax(w)
		if m%64 != 0 || m < 64<<10 || llSlot(m)%16 != 0 {
			t.Errorf("W=%d: llMax %d, slot %d", w, m, llSlot(m))
		}
	}
}
