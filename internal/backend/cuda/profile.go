package cuda

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/settings"
)

// DETCOLL_CUDA_PROFILE=1 times the phases of every LL launch from inside
// the kernel (kernels/profile.h): a measuring tool for lever 0, the fixed
// cost of a small call (docs/perf-levers.md), never on by default. The
// kernels are then compiled with -DDC_PROFILE by NVRTC (the kernels built
// ahead of time have no marks), and each rank prints its means to stderr
// when it closes.

const (
	envProfile = settings.CUDAProfile
	profWords  = 12 // kernels/profile.h's prof_flush
)

// profileFromEnv reports whether DETCOLL_CUDA_PROFILE asks for the marks.
func profileFromEnv() (bool, error) {
	switch v := settings.Get(envProfile); v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want 0 or 1", envProfile, v)
	}
}

// profileSpans names the spans between kernels/profile.h's marks.
var profileSpans = [...]string{"set-up", "acks", "send", "signatures", "receive", "partial lines", "done"}

// printProfile prints what the LL launches of this rank added up (Close,
// before the buffer goes).
func (c *Comm) printProfile() {
	b := make([]byte, profWords*8)
	if err := driver.MemcpyDtoH(b, c.buf+offProf); err != nil {
		fmt.Fprintf(os.Stderr, "detcoll profile: rank %d: %v\n", c.rank, err)
		return
	}
	w := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	n := w(0)
	if n == 0 {
		fmt.Fprintf(os.Stderr, "detcoll profile: rank %d: no LL launch\n", c.rank)
		return
	}
	line := fmt.Sprintf("detcoll profile: rank %d of %d, %d LL launches, mean SM cycles per span:", c.rank, c.world, n)
	for k, name := range profileSpans {
		line += fmt.Sprintf(" %s %d,", name, w(1+k)/n)
	}
	line += fmt.Sprintf(" inside the kernel %d ns", w(8)/n)
	if gaps := w(11); gaps > 0 {
		line += fmt.Sprintf(", mean gap from one launch's end to the next's start %d ns", w(10)/gaps)
	}
	fmt.Fprintln(os.Stderr, line)
}
