package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// clangPrelude is what NVRTC declares before any source and clang, with no
// CUDA headers (-nocudainc), does not: the execution spaces and the
// thread coordinates.
const clangPrelude = `#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
struct dc_dim3 { unsigned x, y, z; };
#define threadIdx (dc_dim3{(unsigned)__nvvm_read_ptx_sreg_tid_x(), 0, 0})
#define blockIdx (dc_dim3{(unsigned)__nvvm_read_ptx_sreg_ctaid_x(), 0, 0})
#define blockDim (dc_dim3{(unsigned)__nvvm_read_ptx_sreg_ntid_x(), 0, 0})
#define gridDim (dc_dim3{(unsigned)__nvvm_read_ptx_sreg_nctaid_x(), 0, 0})
`

// TestKernelsCompileWithClang compiles the kernels' sources to PTX with
// clang, where this machine has it (CI installs it; no GPU, NVRTC or CUDA
// toolkit is needed): a C++ error in a kernel file fails here, not on the
// GPU machine. It is no substitute for NVRTC, which is stricter in places
// (a generic lambda in device code is a host function to it, not to
// clang: see reduce.h's DC_WITH_TYPE).
func TestKernelsCompileWithClang(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the kernels' compile by clang takes ~10 s")
	}
	clang := ""
	for _, name := range []string{"clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"} {
		if p, err := exec.LookPath(name); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		t.Skip("no clang on this machine: the kernels' sources are compiled on the GPU machine only (apt-get install clang)")
	}
	dir := t.TempDir()
	prelude := filepath.Join(dir, "prelude.h")
	if err := os.WriteFile(prelude, []byte(clangPrelude), 0o644); err != nil {
		t.Fatal(err)
	}
	compile := func(name string, src []byte, defines ...string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", "--cuda-gpu-arch=sm_80",
			"-std=c++17", "-O1", "-Wno-unknown-cuda-version", "-Wno-pragma-once-outside-header", "-include", prelude,
			"-S", "-o", path + ".ptx", path}
		out, err := exec.Command(clang, append(defines, args...)...).CombinedOutput()
		if err != nil {
			t.Errorf("%s %v: %v\n%s", name, defines, err, out)
		}
	}
	for _, w := range []int{1, 2, 3, 8} {
		compile(fmt.Sprintf("collective-w%d.cu", w), kernelSource, fmt.Sprintf("-DDC_WORLD=%d", w),
			fmt.Sprintf("-DDC_LL_MAX=%d", defaultLLMax(w)))
	}
	// DETCOLL_CUDA_PROFILE's marks (profile.h).
	compile("collective-w2-profile.cu", kernelSource, "-DDC_WORLD=2", fmt.Sprintf("-DDC_LL_MAX=%d", defaultLLMax(2)), "-DDC_PROFILE=1")
	compile("treesum.cu", source("treesum.cu"), "-DDC_WORLD=1", "-DDC_LL_MAX=64", "-DDC_LEAVES=3")
}
