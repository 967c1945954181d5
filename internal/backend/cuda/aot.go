package cuda

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// Kernels built ahead of time.
//
// NVRTC takes 16-20 s to compile the collectives for one world size on an
// H200's host, which every fresh machine paid at its first Open (the disk
// cache serves the later ones). So the module carries the CUBINs of the
// GPUs we know, for every world size they take by default: aot/ARCH-wW.gz,
// each a gzip whose header comment is the KernelKey of the source and
// options it was built from. Open loads the one for its device and world
// size when its key is the current source's; otherwise (another GPU, a
// tuning knob that changes the options, kernels edited since, a driver
// too old for the CUBIN) it compiles with NVRTC, through the disk cache,
// as before. TestAheadOfTimeKernelsCurrent fails while the files lag the
// source; tools/aot rebuilds them, on a machine with NVRTC (no GPU needed).
// Built with -tags detcoll_noaot the binary embeds none and reads them
// from a folder (aot_dir.go).

// AheadOfTimeArchs and AheadOfTimeWorlds are what the module carries
// kernels for: the data-centre GPUs joined by NVLink (A100, H100 and H200,
// B200) at the world sizes jobs use most (and 3, which the tests use).
// Each file is 200-500 KB gzipped; every pair more costs the repository
// that much again at every change of the kernels.
var (
	AheadOfTimeArchs  = []string{"sm_80", "sm_90", "sm_100"}
	AheadOfTimeWorlds = []int{1, 2, 3, 4, 8}
)

// aotName is the file of arch and world in aot/.
func aotName(arch string, world int) string { return fmt.Sprintf("%s-w%d.gz", arch, world) }

// aotKey is the key of the kernels for arch at world, as Open compiles
// them with the LL threshold llMax.
func aotKey(arch string, world, llMax int) string {
	return driver.KernelKey(kernelSource, "collective.cu", arch, append([]string{"--gpu-architecture=" + arch}, compileOptions(world, llMax)...))
}

// aotCubin returns the CUBIN built ahead of time for arch, world and
// llMax, if the module carries one for the current source.
func aotCubin(arch string, world, llMax int) ([]byte, bool) {
	f, err := aotFiles.Open(aotName(arch, world))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil || zr.Comment != aotKey(arch, world, llMax) {
		return nil, false
	}
	bin, err := io.ReadAll(zr)
	if err != nil || zr.Close() != nil {
		return nil, false
	}
	return bin, true
}

// BuildAheadOfTime compiles the kernels for every arch and world with
// NVRTC, at most jobs at once, and writes them to dir (the module's
// internal/backend/cuda/aot), each under the key of the current source; with
// fillCache it also stores each in this machine's kernel cache, as Open
// would after compiling it (so that a binary built before the files
// serves them from the cache). An arch the loaded NVRTC does not know is
// reported in skipped, not failed. It needs NVRTC, not a GPU.
func BuildAheadOfTime(dir string, archs []string, worlds []int, jobs int, fillCache bool) (skipped []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := driver.Load(); err != nil {
		return nil, err
	}
	defer driver.Unload()
	type job struct {
		arch  string
		world int
	}
	work := make(chan job)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range max(1, jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				llMax := defaultLLMax(j.world)
				opts := append([]string{"--gpu-architecture=" + j.arch}, compileOptions(j.world, llMax)...)
				bin, err := driver.Compile(string(kernelSource), "collective.cu", opts)
				if err == nil {
					err = writeAOT(filepath.Join(dir, aotName(j.arch, j.world)), aotKey(j.arch, j.world, llMax), bin)
				}
				if err == nil && fillCache {
					err = driver.CacheKernel(kernelSource, "collective.cu", j.arch, compileOptions(j.world, llMax), bin)
				}
				mu.Lock()
				var nerr *driver.NVRTCError
				switch {
				case errors.As(err, &nerr) && nerr.Result == driver.NVRTCInvalidOption:
					skipped = append(skipped, fmt.Sprintf("%s (this NVRTC does not know it)", j.arch))
				case err != nil:
					errs = append(errs, fmt.Errorf("%s, W=%d: %w", j.arch, j.world, err))
				}
				mu.Unlock()
			}
		}()
	}
	for _, a := range archs {
		for _, w := range worlds {
			work <- job{a, w}
		}
	}
	close(work)
	wg.Wait()
	return skipped, errors.Join(errs...)
}

// writeAOT writes bin gzipped at path, key in the header's comment.
func writeAOT(path, key string, bin []byte) error {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.Comment = key
	if _, err := zw.Write(bin); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
