package cuda

import (
	"regexp"
	"testing"
)

// TestEveryPrimitiveHasKernelCode: every primitive of the step table is
// named in the kernels' code that executes it: the waits, checks and
// publishes as a case of run's switch (collective.cu), the moves in the
// header of their path (staging.h, push.h, registered.h, ll.h), LL and ALONE where run
// dispatches them. A primitive added to steptable.go without kernel code
// would otherwise fall into run's default branch and move nothing.
func TestEveryPrimitiveHasKernelCode(t *testing.T) {
	read := func(name string) string {
		b, err := kernelDir.ReadFile("kernels/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	run := read("collective.cu")
	moves := read("staging.h") + read("push.h") + read("registered.h")
	for o := opEnd + 1; o < numStepOps; o++ {
		name := "DC_S_" + stepOpDocs[o].name
		var where, text string
		switch {
		case o.waits() || o.publishes():
			where, text = "collective.cu's run", run
			if !regexp.MustCompile(`case ` + name + `:`).MatchString(text) {
				t.Errorf("%v: no case in %s", o, where)
			}
			continue
		case o == opLL || o == opAlone:
			where, text = "collective.cu", run
		case o == opCopyIn:
			where, text = "collective.cu's run", run
		default:
			where, text = "staging.h, push.h or registered.h", moves
		}
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(text) {
			t.Errorf("%v: not named in %s", o, where)
		}
	}
}
