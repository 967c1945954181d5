package driver

import (
	"fmt"
	"os"
	"testing"

	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// roles are the bodies of the child processes that tests start through
// ranktest (rule 15): TestMain runs the role and exits instead of running
// tests.
var roles = map[string]ranktest.Role{
	"ipc-child": func() error {
		if code := ipcChild(); code != 0 {
			return fmt.Errorf("ipc-child exited %d", code)
		}
		return nil
	},
}

func TestMain(m *testing.M) {
	ranktest.Main(roles)
	os.Exit(m.Run())
}
