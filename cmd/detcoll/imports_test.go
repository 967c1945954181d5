package main

import (
	"os/exec"
	"strings"
	"testing"
)

// tools are the packages of the command, never of the library: each
// package's doc says so, and this test holds the library to it.
var tools = []string{
	"internal/bench", "internal/coord", "internal/launch", "internal/mpiref", "internal/nccl",
	"internal/plot", "internal/report", "internal/soak", "internal/version",
}

// TestLibraryImportsNoTool lists what the root package depends on, with
// cgo on and off, and fails for any tool among it.
func TestLibraryImportsNoTool(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	for _, cgo := range []string{"0", "1"} {
		cmd := exec.CommandContext(t.Context(), goTool, "list", "-deps", "-f", "{{.ImportPath}}", "github.com/detcoll/detcoll")
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED="+cgo)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (CGO_ENABLED=%s): %v", cgo, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, tool := range tools {
				if dep == "github.com/detcoll/detcoll/"+tool {
					t.Errorf("CGO_ENABLED=%s: the library imports %s, a tool's package", cgo, tool)
				}
			}
		}
	}
}
