package cuda

import (
	"embed"
	"fmt"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// kernelDir holds the kernels' sources (kernels/proto.h, the generated
// header, is there for readers: source writes it afresh).
//
//go:embed kernels
var kernelDir embed.FS

// kernelFiles are the files of the collectives' kernel, in the order
// NVRTC reads them: each uses only what the files before it declare
// (collective.cu's first comment says what each holds).
var kernelFiles = []string{"launch.h", "profile.h", "tree.h", "prims.h", "lines.h", "wait.h", "staging.h", "push.h", "registered.h", "ll.h", "alone.h", "collective.cu"}

// kernelSource is what NVRTC compiles for the collectives.
var kernelSource = source(kernelFiles...)

// sharedFiles are the kernel files every kernel's text starts with: the
// memory operations and the arithmetic.
var sharedFiles = []string{"ops.h", "reduce.h"}

// source is the text NVRTC compiles for kernel files: the generated
// header (header.go), sharedFiles, then the files,
// each file's lines keeping their numbers in compile errors. NVRTC is
// given no include path: one text, so that the disk cache keys on all of
// it.
func source(files ...string) []byte {
	b := kernelHeader()
	for _, name := range append(append([]string(nil), sharedFiles...), files...) {
		text, err := kernelDir.ReadFile("kernels/" + name)
		if err != nil {
			panic(err) // embedded at build time: cannot be missing
		}
		b = append(b, fmt.Sprintf("#line 1 %q\n", name)...)
		b = append(b, text...)
	}
	return b
}

// compileOptions are the NVRTC options of the kernels besides the
// architecture: plain IEEE adds (no contraction into FMA, no flush to
// zero, which the inline PTX pins down too), the world size the tree
// unrolls over and the LL protocol's largest image.
func compileOptions(world, llMax int) []string {
	return []string{"--std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
		fmt.Sprintf("-DDC_WORLD=%d", world), fmt.Sprintf("-DDC_LL_MAX=%d", llMax)}
}

// loadKernels loads the kernels for the current context's device and
// world size: those built ahead of time (aot.go) where the module carries
// them, else compiled by NVRTC (or found in the disk cache); with
// profile, always compiled, with the marks (profile.go). The caller holds
// the context current on a locked thread.
func loadKernels(dev driver.Device, world, llMax int, profile bool) (driver.Module, [numKernels]driver.Function, error) {
	var fns [numKernels]driver.Function
	arch, err := dev.Arch()
	if err != nil {
		return 0, fns, err
	}
	opts := compileOptions(world, llMax)
	mod, err := driver.Module(0), fmt.Errorf("profiling: the kernels built ahead of time have no marks")
	if profile {
		opts = append(opts, "-DDC_PROFILE=1")
	} else {
		mod, err = loadAOT(arch, world, llMax)
	}
	if err != nil {
		cubin, err := driver.BuildKernel(kernelSource, "collective.cu", arch, opts)
		if err != nil {
			return 0, fns, fmt.Errorf("compile the kernels for %s: %w", arch, err)
		}
		if mod, err = driver.ModuleLoadData(cubin); err != nil {
			return 0, fns, err
		}
	}
	for k, name := range kernelNames {
		if fns[k], err = mod.Function(name); err != nil {
			mod.Unload()
			return 0, fns, err
		}
	}
	return mod, fns, nil
}

// loadAOT loads the kernels built ahead of time for arch and world, or
// says why not (none carried, or the driver refused them).
func loadAOT(arch string, world, llMax int) (driver.Module, error) {
	bin, ok := aotCubin(arch, world, llMax)
	if !ok {
		return 0, fmt.Errorf("no kernels built ahead of time for %s, W=%d", arch, world)
	}
	return driver.ModuleLoadData(bin)
}
