package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// CPUModel names this host's CPU for reports: the model from
// /proc/cpuinfo and the number of CPUs this process may run on (its
// affinity mask, as runtime.NumCPU), such as "AMD EPYC (2 CPUs)". A rank
// bound to one core says "(1 CPUs)", so that plot refuses to compare it
// with an unbound run.
func CPUModel() string {
	model := runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "model name" && strings.TrimSpace(v) != "" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s (%d CPUs)", model, runtime.NumCPU())
}

// Commit names the detcoll source a report comes from: DETCOLL_COMMIT when
// set; else the revision Go stamped into the binary ("-dirty" when the tree
// had changes); else git describe of the current directory's repository,
// but only where that repository is detcoll's own (its go.mod names this
// module): a binary run from another project's folder must not name that
// project's commit; else "unknown".
func Commit() string {
	if c := settings.Get(settings.Commit); c != "" {
		return c
	}
	info, ok := debug.ReadBuildInfo()
	if ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision":
				rev = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "-dirty"
			}
		}
		if rev != "" {
			return rev + dirty
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	top, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
	if err != nil || !declaresModule(filepath.Join(strings.TrimSpace(string(top)), "go.mod"), modulePath) {
		return "unknown"
	}
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty", "--abbrev=12").Output()
	if c := strings.TrimSpace(string(out)); err == nil && c != "" {
		return c
	}
	return "unknown"
}

// modulePath is detcoll's module.
const modulePath = "github.com/detcoll/detcoll"

// declaresModule reports whether the go.mod at path declares module.
func declaresModule(path, module string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == module
		}
	}
	return false
}

// hostname is os.Hostname, or "" when it fails.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
