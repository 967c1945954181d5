package driver

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// EnvCacheDir overrides the kernel cache directory.
const EnvCacheDir = settings.CacheDir

// cacheMagic starts every cache entry; bump the version to orphan old ones.
var cacheMagic = []byte("detcoll-cubin-v1\n")

// CacheDir returns the kernel cache directory: $DETCOLL_CACHE_DIR if set, else
// detcoll/kernels under os.UserCacheDir. It does not create it.
func CacheDir() (string, error) {
	if d := settings.Get(EnvCacheDir); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("detcoll/cuda: kernel cache directory: %w", err)
	}
	return filepath.Join(d, "detcoll", "kernels"), nil
}

// CompileCached returns the compiled kernel for (src, name, arch,
// nvrtcVersion, opts) from the on-disk cache, or runs compile and stores its
// output. Everything that can change the compiler's output must be in the
// key: the source, program name, target architecture (such as "sm_90"),
// compiler version and options.
//
// The cache is best-effort and safe to share between processes: an entry is
// written to a temporary file and renamed into place, so readers see a whole
// entry or none, and each entry carries a checksum, so a corrupt, truncated
// or unreadable entry is recompiled and replaced. A cache that cannot be
// written (read-only home, full disk) costs a recompile next time but is not
// an error. Directories are created 0700 and entries 0600: kernels are not
// secret, but another user must not be able to plant code the GPU will run.
//
// A compile error is returned as is and nothing is cached. CompileCached is
// safe for concurrent use.
func CompileCached(src []byte, name, arch, nvrtcVersion string, opts []string, compile func() ([]byte, error)) ([]byte, error) {
	dir, dirErr := CacheDir()
	key := cacheKey(src, name, arch, nvrtcVersion, opts)
	path := ""
	if dirErr == nil {
		path = filepath.Join(dir, key+".cubin")
		if bin, ok := readEntry(path); ok {
			return bin, nil
		}
	}
	bin, err := compile()
	if err != nil {
		return nil, err
	}
	if len(bin) == 0 {
		return nil, fmt.Errorf("detcoll/cuda: compiling %s for %s produced no code", name, arch)
	}
	if path != "" {
		_ = writeEntry(dir, path, bin) // best-effort; see the doc comment
	}
	return bin, nil
}

// cacheKey hashes every field with its length, so that no two different
// inputs ("ab"+"c" and "a"+"bc") share a key.
func cacheKey(src []byte, name, arch, nvrtcVersion string, opts []string) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		h.Write(b)
	}
	field(cacheMagic)
	field(src)
	field([]byte(name))
	field([]byte(arch))
	field([]byte(nvrtcVersion))
	for _, o := range opts {
		field([]byte(o))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readEntry returns the code in the entry at path if it is whole.
func readEntry(path string) ([]byte, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	rest, ok := bytes.CutPrefix(data, cacheMagic)
	if !ok || len(rest) <= sha256.Size {
		return nil, false
	}
	sum, bin := rest[:sha256.Size], rest[sha256.Size:]
	if want := sha256.Sum256(bin); !bytes.Equal(sum, want[:]) {
		return nil, false
	}
	return bin, true
}

// writeEntry stores bin at path through a temporary file and a rename.
func writeEntry(dir, path string, bin []byte) (err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*") // created 0600
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	sum := sha256.Sum256(bin)
	for _, b := range [][]byte{cacheMagic, sum[:], bin} {
		if _, err := f.Write(b); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// KernelKey identifies a kernel built ahead of time: CompileCached's key
// without the compiler's version, since a CUBIN of one compiler serves any
// driver that loads it (a driver too old for it refuses the load, and
// the caller compiles instead).
func KernelKey(src []byte, name, arch string, opts []string) string {
	return cacheKey(src, name, arch, "ahead-of-time", opts)
}
