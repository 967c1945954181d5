package detcoll_test

import (
	"os"
	"testing"

	"github.com/detcoll/detcoll/internal/ranktest"
)

// roles are the bodies of the ranks that multi-process tests start; see
// internal/ranktest.
var roles = map[string]ranktest.Role{}

func TestMain(m *testing.M) {
	ranktest.Main(roles)
	os.Exit(m.Run())
}
