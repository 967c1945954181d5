package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/detcoll/detcoll"

// library are the module's packages that the library (the root package)
// may depend on: the backends and what they stand on.
var library = []string{
	"", "internal/base", "internal/cpu", "internal/cuda", "internal/cuda/driver", "internal/jobenv",
	"internal/hier", "internal/num", "internal/proto", "internal/store", "internal/tree",
}

// tools are the packages of the command, its tools and the tests, never
// of the library: each package's doc says so, and this test holds the
// library to it.
var tools = []string{
	"cmd/detcoll", "cmd/libdetcoll-nccl", "tools/aot",
	"internal/bench", "internal/coord", "internal/launch", "internal/mpiref", "internal/nccl",
	"internal/ncclshim", "internal/plot", "internal/report", "internal/soak", "internal/verify",
	"internal/version",
	// Adapters a program imports to reach past one host.
	"mpi", "nccl",
	// The tests' and the GPU tools' helpers.
	"internal/check", "internal/conformance", "internal/cuda/gputest", "internal/devmem",
	"internal/ranktest", "internal/testseed",
}

// goList runs go list with args under CGO_ENABLED=cgo and returns the
// module's packages it names, relative to the module ("" for the root).
func goList(t *testing.T, cgo string, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, append([]string{"list", "-f", "{{.ImportPath}}"}, args...)...)
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED="+cgo)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v (CGO_ENABLED=%s): %v", args, cgo, err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if p == module {
			pkgs = append(pkgs, "")
		} else if rel, ok := strings.CutPrefix(p, module+"/"); ok {
			pkgs = append(pkgs, rel)
		}
	}
	return pkgs
}

// TestLibraryImportsNoTool lists what the root package depends on, with
// cgo on and off, and fails for any tool among it, or any package of the
// module that is not the library's.
func TestLibraryImportsNoTool(t *testing.T) {
	for _, cgo := range []string{"0", "1"} {
		for _, dep := range goList(t, cgo, "-deps", module) {
			switch {
			case slices.Contains(tools, dep):
				t.Errorf("CGO_ENABLED=%s: the library imports %s, a tool's package", cgo, dep)
			case !slices.Contains(library, dep):
				t.Errorf("CGO_ENABLED=%s: the library imports %s, which is not in this test's list of the library's packages", cgo, dep)
			}
		}
	}
}

// TestEveryPackageIsPlaced: every package of the module is the library's
// or a tool's, so that a new package is placed, here and in its doc,
// before the library can come to import it unnoticed.
func TestEveryPackageIsPlaced(t *testing.T) {
	for _, p := range goList(t, "1", module+"/...") {
		if !slices.Contains(library, p) && !slices.Contains(tools, p) {
			t.Errorf("%s is in neither list of imports_test.go: say in its doc whether the library may import it, and add it to one", p)
		}
	}
}
