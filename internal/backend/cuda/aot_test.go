package cuda

import (
	"compress/gzip"
	"fmt"
	"io/fs"
	"slices"
	"testing"
)

// TestAheadOfTimeKernelsCurrent: the module carries kernels for every
// architecture and world size it promises, each built from the current
// source (the key in its header). Editing a kernel fails this test until
// tools/aot rebuilds them (aot/README.md).
func TestAheadOfTimeKernelsCurrent(t *testing.T) {
	if noAOT(t) {
		return
	}
	files, err := fs.Glob(aotFiles, "*.gz")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, arch := range AheadOfTimeArchs {
		for _, w := range AheadOfTimeWorlds {
			want = append(want, aotName(arch, w))
			f, err := aotFiles.Open(aotName(arch, w))
			if err != nil {
				t.Errorf("%s, W=%d: no kernels built ahead of time: %v", arch, w, err)
				continue
			}
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Errorf("%s: %v", aotName(arch, w), err)
			} else if key := aotKey(arch, w, defaultLLMax(w)); zr.Comment != key {
				t.Errorf("%s: built from other source or options (key %.12s, the current source's %.12s): rebuild them (internal/backend/cuda/aot/README.md)",
					aotName(arch, w), zr.Comment, key)
			}
			f.Close()
		}
	}
	for _, f := range files {
		if !slices.Contains(want, f) {
			t.Errorf("%s: not an architecture and world size of AheadOfTimeArchs and AheadOfTimeWorlds", f)
		}
	}
	if _, ok := aotCubin("sm_90", 2, defaultLLMax(2)+64); ok {
		t.Error("kernels of other options served as the defaults'")
	}
}

// TestAheadOfTimeKey: the key covers what changes the code: the
// architecture, the world size and the options.
func TestAheadOfTimeKey(t *testing.T) {
	seen := map[string]string{}
	for _, arch := range []string{"sm_80", "sm_90"} {
		for _, w := range []int{1, 2} {
			for _, ll := range []int{64 << 10, 128 << 10} {
				k := aotKey(arch, w, ll)
				what := fmt.Sprintf("%s W=%d ll=%d", arch, w, ll)
				if prev, ok := seen[k]; ok {
					t.Errorf("%s and %s share a key", prev, what)
				}
				seen[k] = what
			}
		}
	}
}
