package detcoll_test

import (
	"os"
	"testing"

	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// TestMain runs the ranks of TestBadInputKeepsPeersUsable, the root's one
// multi-process test (internal/testkit/ranktest). The backends' tests are the
// conformance suite's, run in each backend's package.
func TestMain(m *testing.M) {
	ranktest.Main(map[string]ranktest.Role{"badinput": roleBadInput})
	os.Exit(m.Run())
}
