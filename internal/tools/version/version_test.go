package version

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		info Info
		want string
	}{
		{"found", Info{Module: "github.com/detcoll/detcoll", Version: "v1.2.3", Revision: "0123abcd", Go: "go1.26.0",
			CUDA: Lib{Version: "12.4", Name: "libcuda.so.1"}, NVRTC: Lib{Version: "12.4", Name: "libnvrtc.so.12"},
			NCCL: Lib{Version: "2.28.3", Name: "libnccl.so.2"}},
			"detcoll  github.com/detcoll/detcoll v1.2.3\ncommit   0123abcd\ngo       go1.26.0 " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
				"cuda     12.4 (libcuda.so.1)\nnvrtc    12.4 (libnvrtc.so.12)\nnccl     2.28.3 (libnccl.so.2)\n"},
		{"not found", Info{Module: "github.com/detcoll/detcoll", Version: "(devel)", Revision: "0123abcd", Modified: true, Go: "go1.26.0",
			CUDA: Lib{Err: errors.New("no libcuda")}, NVRTC: Lib{Err: errors.New("no NVRTC")}, NCCL: Lib{Err: errors.New("no NCCL")}},
			"detcoll  github.com/detcoll/detcoll (devel)\ncommit   0123abcd (modified)\ngo       go1.26.0 " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
				"cuda     not found: no libcuda\nnvrtc    not found: no NVRTC\nnccl     not found: no NCCL\n"},
		{"no build info", Info{Go: "go1.26.0", CUDA: Lib{Err: errors.New("x")}, NVRTC: Lib{Err: errors.New("x")}, NCCL: Lib{Err: errors.New("x")}},
			"detcoll  detcoll unknown\ncommit   unknown (not stamped: go build or go install in a git checkout stamps it, unless -buildvcs=false (in GOFLAGS too) or go run/go test built it)\n"},
	} {
		var b bytes.Buffer
		if err := Write(&b, tc.info); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: Write =\n%s\nwant it to start with\n%s", tc.name, got, tc.want)
		}
	}
}

// TestRead reads this machine: whatever it has, every library is either
// found with a version or not found with a reason.
func TestRead(t *testing.T) {
	info := Read()
	if info.Go != runtime.Version() {
		t.Errorf("Go = %q; want %q", info.Go, runtime.Version())
	}
	for name, l := range map[string]Lib{"cuda": info.CUDA, "nvrtc": info.NVRTC, "nccl": info.NCCL} {
		if (l.Err == nil) == (l.Version == "") || (l.Err == nil) == (l.Name == "") {
			t.Errorf("%s: %+v; want a version and a name, or an error", name, l)
		}
		t.Logf("%s: %v", name, l)
	}
}
