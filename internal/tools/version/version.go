// Package version is the body of "detcoll version": what this binary is
// (the module's version and the commit it was built from, as Go stamped
// them) and what it finds on this machine (the CUDA driver, NVRTC and
// NCCL, each with its version or why it is not found). A machine without
// a GPU or any of those libraries is an ordinary answer, not an error.
//
// It imports the driver and NCCL packages only to ask them; the library
// must never import it.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// Info is what Read found.
type Info struct {
	Module   string // the main module's path, "" when the binary has no build info
	Version  string // its version: "v1.2.3", or "(devel)" for a build from a checkout
	Revision string // vcs.revision, "" when not stamped (go test, or no VCS)
	Modified bool   // vcs.modified: the tree had changes
	Go       string // runtime.Version()

	CUDA, NVRTC, NCCL Lib
}

// Lib is one library found, or not, on this machine.
type Lib struct {
	Version string // "12.4"; "" when Err is set
	Name    string // the file or soname it was loaded from
	Err     error  // why it is not found
}

// Read gathers Info. Looking for NCCL loads it for the rest of the
// process (NCCL cannot be unloaded); the driver and NVRTC are left as
// they were.
func Read() Info {
	info := Info{Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.Module, info.Version = bi.Main.Path, bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if name, v, err := driver.ProbeCUDA(); err != nil {
		info.CUDA.Err = err
	} else {
		// cuDriverGetVersion's code is 1000*major + 10*minor.
		info.CUDA = Lib{Version: fmt.Sprintf("%d.%d", v/1000, v%1000/10), Name: name}
	}
	if name, major, minor, err := driver.ProbeNVRTC(); err != nil {
		info.NVRTC.Err = err
	} else {
		info.NVRTC = Lib{Version: fmt.Sprintf("%d.%d", major, minor), Name: name}
	}
	info.NCCL = readNCCL()
	return info
}

func readNCCL() Lib {
	if err := nccl.Load(); err != nil {
		return Lib{Err: err}
	}
	v, err := nccl.Version()
	if err != nil {
		return Lib{Err: err}
	}
	// ncclGetVersion's code is 10000*major + 100*minor + patch.
	return Lib{Version: fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100), Name: nccl.Library()}
}

// Write prints info, one "name value" line each:
//
//	detcoll  github.com/detcoll/detcoll (devel)
//	commit   0123abcd... (modified)
//	go       go1.26.0 linux/amd64
//	cuda     12.4 (libcuda.so.1)
//	nvrtc    not found: ...
//	nccl     2.28.3 (libnccl.so.2)
func Write(w io.Writer, info Info) error {
	module, version := info.Module, info.Version
	if module == "" {
		module = "detcoll"
	}
	if version == "" {
		version = "unknown"
	}
	commit := info.Revision
	switch {
	case commit == "":
		commit = "unknown (not stamped: go build or go install in a git checkout stamps it, unless -buildvcs=false (in GOFLAGS too) or go run/go test built it)"
	case info.Modified:
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(w, "detcoll  %s %s\ncommit   %s\ngo       %s %s/%s\ncuda     %s\nnvrtc    %s\nnccl     %s\n",
		module, version, commit, info.Go, runtime.GOOS, runtime.GOARCH, info.CUDA, info.NVRTC, info.NCCL)
	return err
}

// String is "12.4 (libcuda.so.1)", or "not found: why".
func (l Lib) String() string {
	if l.Err != nil {
		return "not found: " + l.Err.Error()
	}
	return l.Version + " (" + l.Name + ")"
}
