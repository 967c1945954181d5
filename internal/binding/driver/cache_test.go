package driver

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeCompiler counts calls and returns a CUBIN that depends on its call
// number, so a test can tell a cached result from a fresh one.
type fakeCompiler struct {
	calls int
	err   error
}

func (f *fakeCompiler) compile() ([]byte, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return []byte{0x7f, 'E', 'L', 'F', byte(f.calls)}, nil
}

type cacheArgs struct {
	src                 []byte
	name, arch, version string
	opts                []string
}

func (a cacheArgs) run(f *fakeCompiler) ([]byte, error) {
	return CompileCached(a.src, a.name, a.arch, a.version, a.opts, f.compile)
}

var baseArgs = cacheArgs{
	src:     []byte(`extern "C" __global__ void k() {}`),
	name:    "k.cu",
	arch:    "sm_90",
	version: "13.0",
	opts:    []string{"--gpu-architecture=sm_90", "-std=c++17"},
}

func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.cubin"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCompileCachedHitAndMiss(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	t.Setenv(EnvCacheDir, dir)
	var f fakeCompiler
	first, err := baseArgs.run(&f)
	if err != nil {
		t.Fatal(err)
	}
	again, err := baseArgs.run(&f)
	if err != nil {
		t.Fatal(err)
	}
	if f.calls != 1 || !bytes.Equal(first, again) {
		t.Fatalf("second call: compiles = %d, got %x; want 1 compile and %x", f.calls, again, first)
	}
	// Every field is part of the key.
	variants := map[string]cacheArgs{}
	v := baseArgs
	v.src = []byte(`extern "C" __global__ void k2() {}`)
	variants["source"] = v
	v = baseArgs
	v.name = "k2.cu"
	variants["name"] = v
	v = baseArgs
	v.arch = "sm_100"
	variants["arch"] = v
	v = baseArgs
	v.version = "13.1"
	variants["version"] = v
	v = baseArgs
	v.opts = []string{"--gpu-architecture=sm_90"}
	variants["options"] = v
	v = baseArgs
	v.opts = []string{"--gpu-architecture=sm_90-std=c++17"} // same bytes, other split
	variants["option split"] = v
	for what, a := range variants {
		before := f.calls
		if _, err := a.run(&f); err != nil {
			t.Fatal(err)
		}
		if f.calls != before+1 {
			t.Errorf("changing the %s did not recompile", what)
		}
	}
	if got, want := len(cacheEntries(t, dir)), 1+len(variants); got != want {
		t.Errorf("%d cache entries; want %d", got, want)
	}
}

func TestCompileCachedPermissions(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permission bits")
	}
	dir := filepath.Join(t.TempDir(), "a", "cache")
	t.Setenv(EnvCacheDir, dir)
	var f fakeCompiler
	if _, err := baseArgs.run(&f); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o700 {
		t.Errorf("cache dir mode = %o; want 700", got)
	}
	entries := cacheEntries(t, dir)
	if len(entries) != 1 {
		t.Fatalf("entries = %v; want one", entries)
	}
	st, err = os.Stat(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("entry mode = %o; want 600", got)
	}
	all, _ := os.ReadDir(dir)
	if len(all) != 1 {
		t.Errorf("cache dir holds %d files; want 1 (no temporary files left)", len(all))
	}
}

func TestCompileCachedCorruptEntry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string) error
	}{
		{"flipped byte", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)-1] ^= 0xff
			return os.WriteFile(p, b, 0o600)
		}},
		{"truncated", func(p string) error { return os.Truncate(p, 10) }},
		{"empty", func(p string) error { return os.Truncate(p, 0) }},
		{"wrong magic", func(p string) error {
			return os.WriteFile(p, []byte("not a cache entry at all, but long enough to pass a size check"), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(EnvCacheDir, dir)
			var f fakeCompiler
			if _, err := baseArgs.run(&f); err != nil {
				t.Fatal(err)
			}
			if err := tc.damage(cacheEntries(t, dir)[0]); err != nil {
				t.Fatal(err)
			}
			got, err := baseArgs.run(&f)
			if err != nil {
				t.Fatal(err)
			}
			if f.calls != 2 || got[4] != 2 {
				t.Fatalf("after damage: compiles = %d, got %x; want a recompile", f.calls, got)
			}
			// The entry was replaced by a good one.
			if _, err := baseArgs.run(&f); err != nil || f.calls != 2 {
				t.Errorf("third call: compiles = %d, err %v; want a cache hit", f.calls, err)
			}
		})
	}
}

func TestCompileCachedUnreadableEntry(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvCacheDir, dir)
	key := cacheKey(baseArgs.src, baseArgs.name, baseArgs.arch, baseArgs.version, baseArgs.opts)
	// A directory where the entry should be can be neither read nor replaced.
	if err := os.Mkdir(filepath.Join(dir, key+".cubin"), 0o700); err != nil {
		t.Fatal(err)
	}
	var f fakeCompiler
	for i := 1; i <= 2; i++ {
		got, err := baseArgs.run(&f)
		if err != nil {
			t.Fatalf("call %d: %v; want the compiled code despite the broken cache", i, err)
		}
		if f.calls != i || len(got) == 0 {
			t.Fatalf("call %d: compiles = %d, got %x", i, f.calls, got)
		}
	}
	all, _ := os.ReadDir(dir)
	if len(all) != 1 {
		t.Errorf("cache dir holds %d entries; want 1 (no temporary files left)", len(all))
	}
}

func TestCompileCachedUnwritableDir(t *testing.T) {
	// A file where the cache directory should be: nothing can be cached, but
	// compiling still works.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvCacheDir, filepath.Join(file, "cache"))
	var f fakeCompiler
	for i := 1; i <= 2; i++ {
		if _, err := baseArgs.run(&f); err != nil || f.calls != i {
			t.Fatalf("call %d: compiles = %d, err %v; want %d, nil", i, f.calls, err, i)
		}
	}
}

func TestCompileCachedCompileError(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvCacheDir, dir)
	boom := errors.New("boom")
	f := fakeCompiler{err: boom}
	if _, err := baseArgs.run(&f); !errors.Is(err, boom) {
		t.Fatalf("err = %v; want %v", err, boom)
	}
	if n := len(cacheEntries(t, dir)); n != 0 {
		t.Errorf("%d entries after a failed compile; want 0", n)
	}
	empty := func() ([]byte, error) { return nil, nil }
	if _, err := CompileCached(baseArgs.src, "k.cu", "sm_90", "13.0", nil, empty); err == nil {
		t.Errorf("empty compile output: err = nil; want an error")
	}
}

func TestCacheDir(t *testing.T) {
	t.Setenv(EnvCacheDir, "/some/where")
	if d, err := CacheDir(); err != nil || d != "/some/where" {
		t.Errorf("CacheDir() = %q, %v; want /some/where", d, err)
	}
	t.Setenv(EnvCacheDir, "")
	base := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", base) // os.UserCacheDir on Linux
	t.Setenv("HOME", base)           // and on macOS
	d, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("detcoll", "kernels"); !strings.HasPrefix(d, base) || !strings.HasSuffix(d, want) {
		t.Errorf("CacheDir() = %q; want it under %s, ending in %s", d, base, want)
	}
}
