package detcoll_test

import (
	"os"
	"testing"

	"github.com/detcoll/detcoll/internal/ranktest"
)

// roles are the bodies of the ranks that the package's multi-process
// tests start (internal/ranktest): the backends' tests are the
// conformance suite's (internal/conformance), run in each backend's
// package; the public API's bad-input test at W=3 is here.
var roles = map[string]ranktest.Role{"badinput": roleBadInput}

func TestMain(m *testing.M) {
	ranktest.Main(roles)
	os.Exit(m.Run())
}
