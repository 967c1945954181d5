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
	"", "internal/core/base", "internal/backend/cpu", "internal/backend/cuda", "internal/binding/dl", "internal/binding/driver", "internal/job/jobenv",
	"internal/backend/hier", "internal/core/num", "internal/core/proto", "internal/core/settings", "internal/job/proc", "internal/job/store", "internal/core/tree",
}

// tools are the packages of the command, its tools and the tests, never
// of the library: each package's doc says so, and this test holds the
// library to it.
var tools = []string{
	"cmd/detcoll", "cmd/libdetcoll-nccl", "tools/aot",
	"internal/tools/bench", "internal/tools/coord", "internal/job/launch", "internal/binding/mpiref", "internal/binding/nccl",
	"internal/shim/ncclshim", "internal/tools/plot", "internal/tools/report", "internal/tools/soak", "internal/tools/verify",
	"internal/tools/version",
	// Adapters a program imports to reach past one host.
	"mpi", "nccl",
	// The tests' and the GPU tools' helpers.
	"internal/testkit/check", "internal/testkit/conformance", "internal/testkit/gputest", "internal/tools/devmem",
	"internal/testkit/ranktest", "internal/testkit/testseed",
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

// layers are the module's folders in the order the README's layout gives
// them: a package may import its own layer's packages and those of the
// layers before it, never a later one's.
var layers = []func(pkg string) bool{
	prefix("internal/core/"),
	prefix("internal/binding/"),
	prefix("internal/job/"),
	prefix("internal/backend/"),
	func(p string) bool { return p == "" || p == "mpi" || p == "nccl" },
	prefix("internal/shim/"),
	prefix("internal/testkit/"),
	prefix("internal/tools/"),
	func(p string) bool { return strings.HasPrefix(p, "cmd/") || strings.HasPrefix(p, "tools/") },
}

func prefix(s string) func(string) bool {
	return func(p string) bool { return strings.HasPrefix(p, s) }
}

func layerOf(pkg string) int {
	for i, in := range layers {
		if in(pkg) {
			return i
		}
	}
	return -1
}

// TestLayers holds every package's imports (tests' aside) to the layers,
// with cgo on and off.
func TestLayers(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	for _, cgo := range []string{"0", "1"} {
		cmd := exec.CommandContext(t.Context(), goTool, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...")
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED="+cgo)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (CGO_ENABLED=%s): %v", cgo, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			pkg := relative(fields[0])
			from := layerOf(pkg)
			if from < 0 {
				t.Errorf("CGO_ENABLED=%s: %q is in no layer: put it in one of the README's folders", cgo, pkg)
				continue
			}
			for _, imp := range fields[1:] {
				if !strings.HasPrefix(imp, module) {
					continue
				}
				if to := layerOf(relative(imp)); to > from {
					t.Errorf("CGO_ENABLED=%s: %q imports %q, of a later layer", cgo, pkg, relative(imp))
				}
			}
		}
	}
}

// relative is a module package's path relative to the module ("" for the
// root).
func relative(path string) string {
	if path == module {
		return ""
	}
	return strings.TrimPrefix(path, module+"/")
}
