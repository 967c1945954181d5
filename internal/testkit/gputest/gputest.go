// Package gputest decides, for every test of the module that needs GPUs,
// what happens where they are missing: the test skips, or, under
// DETCOLL_REQUIRE_GPU=1, fails. A device run sets the variable, so that a
// machine whose driver did not load, or that shows fewer GPUs than a test
// needs, makes the run fail instead of passing on skipped tests.
//
// It imports no other package of the module (the driver's own tests use
// it); callers count their GPUs and say why they cannot run. Only tests
// import it; the library and the tools must never.
package gputest

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// Env is the switch: "1" makes a missing GPU a failure.
const Env = settings.RequireGPU

// Required reports whether the switch is on.
func Required() bool { return settings.Get(Env) == "1" }

// T is the part of testing.TB that Missing uses.
type T interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Missing ends t because the GPUs it needs are not here, for the reason
// format and args give: it skips t, or fails it when Required.
func Missing(t T, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (%s=1: GPU tests must run)", why, Env)
		return
	}
	t.Skipf("%s", why)
}

// Need ends t by Missing unless have >= n GPUs are here and err, the
// failure to count them (or to load the driver), is nil.
func Need(t T, n, have int, err error) {
	t.Helper()
	if err != nil {
		Missing(t, "cuda: need %d GPUs: %v", n, err)
		return
	}
	if have < n {
		Missing(t, "cuda: need %d GPUs, have %d", n, have)
	}
}
