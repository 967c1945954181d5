package driver

import (
	"os"
	"testing"
)

// envTestRole makes the test binary act as a child process of a test
// (rule 15): TestMain runs the role and exits instead of running tests.
const envTestRole = "DETCOLL_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(envTestRole) {
	case "":
		os.Exit(m.Run())
	case "ipc-child":
		os.Exit(ipcChild())
	default:
		os.Stderr.WriteString("unknown " + envTestRole + "\n")
		os.Exit(2)
	}
}
