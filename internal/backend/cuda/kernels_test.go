package cuda

import (
	"regexp"
	"strings"
	"testing"
)

// kernelSpan returns the source of the collectives' kernel from the first
// line that matches start up to the next line that is exactly "}" or "};".
func kernelSpan(t *testing.T, start string) string {
	t.Helper()
	src := string(kernelSource)
	loc := regexp.MustCompile(`(?m)^` + start).FindStringIndex(src)
	if loc == nil {
		t.Fatalf("the kernel has no line matching %q", start)
	}
	end := regexp.MustCompile(`(?m)^\};?$`).FindStringIndex(src[loc[1]:])
	if end == nil {
		t.Fatalf("no end for %q", start)
	}
	return src[loc[0] : loc[1]+end[1]]
}

// TestOnePollerPerBlock: a waiting thread reads only its own word and the
// timer; the peers' status words (over NVLink), the host's abort word
// (over PCIe) and the probes are read by one poller per block, poll_block
// (issue 11, defect 9: every waiting LL thread read them).
func TestOnePollerPerBlock(t *testing.T) {
	for _, start := range []string{`struct Waiter \{`, `__device__ bool ll_wait\(`, `__device__ bool wait_all\(`} {
		body := kernelSpan(t, start)
		for _, banned := range []string{"DC_OFF_STATUS", "DC_REC_ABORT", "ll_header_seen", "other_call", "DC_OFF_STAGE) >="} {
			if strings.Contains(body, banned) {
				t.Errorf("%s reads %s itself; only poll_block may:\n%s", start, banned, body)
			}
		}
	}
	poll := kernelSpan(t, `__device__ void poll_block\(`)
	for _, want := range []string{"DC_OFF_STATUS", "DC_REC_ABORT", "DC_ABORT_NS"} {
		if !strings.Contains(poll, want) {
			t.Errorf("poll_block does not read %s", want)
		}
	}
}

// TestLLWindowsByTicket: an LL block's window, and who sends the
// signature header, follow the order in which blocks start, not their
// index (issue 11, defect 8: block b waited for the peer's block b, and
// every block for the header of the peer's block 0, which need not run
// first).
func TestLLWindowsByTicket(t *testing.T) {
	for _, start := range []string{`__device__ void run_ll\(`, `__device__ void prefetch_lines\(`, `__device__ void compute_window\(`} {
		if body := kernelSpan(t, `(template <class E>\n)?`+start); strings.Contains(body, "blockIdx") {
			t.Errorf("%s uses blockIdx:\n%s", start, body)
		}
	}
}
