package cuda

import (
	_ "embed"
	"fmt"
	"slices"

	"github.com/detcoll/detcoll/internal/cuda/driver"
)

var (
	//go:embed kernels/ops.h
	opsSource []byte
	//go:embed kernels/collective.cu
	collectiveSource []byte
	//go:embed kernels/treesum.cu
	treeSumSource []byte
)

// kernelSource is what NVRTC compiles for the collectives: the generated
// header (header.go), ops.h, then collective.cu, each file's lines keeping
// their numbers in compile errors.
var kernelSource = source("collective.cu", collectiveSource)

// source is a kernel file as NVRTC compiles it: after the generated header
// and ops.h, which it shares with every other kernel file (NVRTC is given
// no include path: one text, so that the disk cache keys on all of it).
func source(name string, text []byte) []byte {
	return slices.Concat(kernelHeader(), []byte("#line 1 \"ops.h\"\n"), opsSource,
		[]byte(fmt.Sprintf("#line 1 %q\n", name)), text)
}

// compileOptions are the NVRTC options of the kernels besides the
// architecture: plain IEEE adds (no contraction into FMA, no flush to
// zero, which the inline PTX pins down too), the world size the tree
// unrolls over and the LL protocol's largest image.
func compileOptions(world, llMax int) []string {
	return []string{"--std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
		fmt.Sprintf("-DDC_WORLD=%d", world), fmt.Sprintf("-DDC_LL_MAX=%d", llMax)}
}

// loadKernels compiles (or finds in the disk cache) the kernels for the
// current context's device and world size, and loads them. The caller
// holds the context current on a locked thread.
func loadKernels(dev driver.Device, world, llMax int) (driver.Module, [numKernels]driver.Function, error) {
	var fns [numKernels]driver.Function
	arch, err := dev.Arch()
	if err != nil {
		return 0, fns, err
	}
	cubin, err := driver.BuildKernel(kernelSource, "collective.cu", arch, compileOptions(world, llMax))
	if err != nil {
		return 0, fns, fmt.Errorf("compile the kernels for %s: %w", arch, err)
	}
	mod, err := driver.ModuleLoadData(cubin)
	if err != nil {
		return 0, fns, err
	}
	for k, name := range kernelNames {
		if fns[k], err = mod.Function(name); err != nil {
			mod.Unload()
			return 0, fns, err
		}
	}
	return mod, fns, nil
}
