// Package settings is the one list of the DETCOLL_* environment variables
// that detcoll reads: each one's name, who reads it, whether it is a
// tuning knob, and what it does. Code reads them only through Get (or
// base.TuningKnob, which calls it), with the names declared here, so that
// the list cannot fall behind the code: a test fails on a DETCOLL_ name
// written anywhere else, and on a README table that differs from Table.
//
// Programs using the Go API should set detcoll.Options instead where a
// field exists: the variables serve the launchers, the NCCL-compatible
// library (which has no other way in), the tools and measurement. Every
// one is read when something starts (Open, the library's load, a tool's
// start), never inside a call.
package settings

import (
	"fmt"
	"os"
	"strings"
)

// The variables, by group.
const (
	// The job.
	Addr           = "DETCOLL_ADDR"
	Secret         = "DETCOLL_SECRET"
	SHMDir         = "DETCOLL_SHM_DIR"
	StoreSilence   = "DETCOLL_STORE_SILENCE"
	VirtualHosts   = "DETCOLL_VIRTUAL_HOSTS"
	ShareDevices   = "DETCOLL_CUDA_SHARE_DEVICES"
	CacheDir       = "DETCOLL_CACHE_DIR"
	AOTDir         = "DETCOLL_AOT_DIR"
	LibCUDA        = "DETCOLL_LIBCUDA"
	LibNVRTC       = "DETCOLL_LIBNVRTC"
	LibNCCL        = "DETCOLL_LIBNCCL"
	CUDAMaxBlocks  = "DETCOLL_CUDA_MAX_BLOCKS"
	CUDALLMax      = "DETCOLL_CUDA_LL_MAX"
	CUDALLWindow   = "DETCOLL_CUDA_LL_WINDOW"
	CUDAPushCopy   = "DETCOLL_CUDA_PUSH_COPY"
	CUDAProfile    = "DETCOLL_CUDA_PROFILE"
	CPUOneShotMax  = "DETCOLL_CPU_ALLREDUCE_ONESHOT_MAX"
	CPUStreamMin   = "DETCOLL_CPU_STREAM_MIN"
	CPUStreamChunk = "DETCOLL_CPU_STREAM_CHUNK"
	CPUCachedMax   = "DETCOLL_CPU_CACHED_COPY_MAX"
	NCCLMode       = "DETCOLL_NCCL_MODE"
	RealNCCL       = "DETCOLL_REAL_NCCL"
	Capacity       = "DETCOLL_CAPACITY"
	Timeout        = "DETCOLL_TIMEOUT"
	NCCLMemory     = "DETCOLL_NCCL_MEMORY"
	NCCLSetup      = "DETCOLL_NCCL_SETUP"
	NCCLHosts      = "DETCOLL_NCCL_HOSTS"
	NCCLReport     = "DETCOLL_NCCL_REPORT"
	NCCLDebug      = "DETCOLL_NCCL_DEBUG"
	NCCLCPUProfile = "DETCOLL_NCCL_CPUPROFILE"
	NCCLLib        = "DETCOLL_NCCL_LIB"
	EnableReexec   = "DETCOLL_ENABLE_REEXEC"
	Commit         = "DETCOLL_COMMIT"
	SoakDir        = "DETCOLL_SOAK_DIR"
	RequireGPU     = "DETCOLL_REQUIRE_GPU"
	Exhaustive     = "DETCOLL_EXHAUSTIVE"
	TestSeed       = "DETCOLL_TEST_SEED"
)

// Var is one variable.
type Var struct {
	Name   string
	Group  string // a heading of the table
	ReadBy string // who reads it, when
	Tuning bool   // a knob for measuring thresholds, not API: every rank must set the same value
	Doc    string
}

// Vars is every variable, in the table's order. The harnesses' own
// variables for the processes they start (DETCOLL_TEST_*,
// DETCOLL_MPI_TEST_*) are the tests' business and are not listed.
var Vars = []Var{
	{Addr, "The job", "Open (internal/job/jobenv)", false, "host:port of rank 0's rendezvous, when no launcher variable gives one (`detcoll run` sets it)"},
	{Secret, "The job", "Open", false, "the job's shared secret for the rendezvous; never written to reports"},
	{SHMDir, "The job", "the cpu backend's Open", false, "where shared-memory segments live (default /dev/shm); tests give each job its own"},
	{StoreSilence, "The job", "the rendezvous store", false, "how long a silent peer may stay so before it counts as lost (default 5s within a machine, 900ms from another)"},
	{VirtualHosts, "The job", "packages nccl and mpi, libdetcoll-nccl", false, "run the ranks as this many hosts on one machine (bench, verify and soak set it for `--hosts`; the library splits every communicator so)"},

	{CacheDir, "GPUs", "the kernel cache (internal/binding/driver)", false, "where kernels compiled by NVRTC are kept (default ~/.cache/detcoll/kernels)"},
	{AOTDir, "GPUs", "binaries built with -tags detcoll_noaot (internal/backend/cuda)", false, "the folder of the kernels built ahead of time, which such a binary does not embed (the device runs' binaries: tools/gpu-build.sh)"},
	{LibCUDA, "GPUs", "the CUDA binding's load", false, "the libcuda to dlopen instead of the search"},
	{LibNVRTC, "GPUs", "the CUDA binding's load", false, "the NVRTC to dlopen instead of the search (optional: kernels are built ahead of time for sm_80, sm_90, sm_100)"},
	{LibNCCL, "GPUs", "package nccl", false, "the libnccl.so.2 to dlopen (the across-hosts rails, bench's reference)"},
	{ShareDevices, "GPUs", "the cuda backend's Open", false, "`1`: a rank past the visible GPUs takes GPU rank mod their count (several ranks on one GPU: MPS or time-sliced)"},
	{CUDAMaxBlocks, "GPUs", "the cuda backend's Open", true, "blocks of a launch that may wait (48 at W <= 2, 32 from 3; docs/gpu-sharing.md)"},
	{CUDALLMax, "GPUs", "the cuda backend's Open", true, "the LL protocol's largest message"},
	{CUDALLWindow, "GPUs", "the cuda backend's Open", true, "the LL protocol's window per block"},
	{CUDAProfile, "GPUs", "the cuda backend's Open", true, "`1` (for measuring lever 0): kernels compiled with DC_PROFILE, whose LL launches time their phases (clock64) and the gaps between launches (%globaltimer); each rank prints the means to stderr at Close. Compiles with NVRTC, never the kernels built ahead of time"},
	{CUDAPushCopy, "GPUs", "the cuda backend's Open", true, "`engine` (experimental, for measuring: not safe when a rank fails, docs/perf-levers.md): the push path's first copies (each input part to its reducer) by the copy engines, freeing the SMs; `sm` (default): by the kernel"},

	{CPUOneShotMax, "The cpu backend", "Open", true, "largest all-reduce (bytes) on the one-shot path"},
	{CPUStreamMin, "The cpu backend", "Open", true, "smallest gather or broadcast (bytes) streamed"},
	{CPUStreamChunk, "The cpu backend", "Open", true, "a streamed call's chunk (bytes)"},
	{CPUCachedMax, "The cpu backend", "Open", true, "largest call whose copies go through the cache"},

	{NCCLMode, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "`delegate` (default: what detcoll cannot serve goes to NCCL, said once on stderr) or `strict` (refused)"},
	{RealNCCL, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "the real libnccl.so.2 that calls are handed to"},
	{Capacity, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "Options.Capacity of the communicators it opens"},
	{Timeout, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "Options.Timeout of the communicators it opens"},
	{NCCLMemory, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "device memory per served communicator (default 64 MiB)"},
	{NCCLSetup, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "`lazy` (default: at the first served call) or `init`"},
	{NCCLHosts, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "`delegate` (default: communicators whose ranks are on several machines go to NCCL) or `serve` (detcoll serves them over rails of its own; run on one GPU as virtual machines, not yet on separate ones)"},
	{NCCLReport, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "a JSON record of every call, written at exit (`%p`: the process id)"},
	{NCCLDebug, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "`1`: the library's debug lines on stderr"},
	{NCCLCPUProfile, "libdetcoll-nccl (docs/nccl.md)", "the library's load", false, "a file for a Go CPU profile of the library"},
	{NCCLLib, "libdetcoll-nccl (docs/nccl.md)", "the Python package", false, "the library that `detcoll.torch.enable()` preloads"},
	{EnableReexec, "libdetcoll-nccl (docs/nccl.md)", "the Python package", false, "set in a program that `enable()` restarted"},

	{Commit, "Tools and tests", "bench, soak and verify reports", false, "the commit reports name, when the binary carries none"},
	{SoakDir, "Tools and tests", "`detcoll soak`", false, "where a soak's ranks leave their results"},
	{RequireGPU, "Tools and tests", "the GPU tests", false, "`1`: GPU tests fail instead of skipping where there is no GPU"},
	{Exhaustive, "Tools and tests", "internal/core/num's tests", false, "`1`: check max and min over all 2^32 pairs of 16-bit floats (minutes)"},
	{TestSeed, "Tools and tests", "the tests", false, "replays a test run's random inputs (each test logs its seed)"},
}

// Get returns the value of the variable name, which must be one of Vars
// or a test harness's (DETCOLL_TEST_*, DETCOLL_MPI_TEST_*): an unlisted
// name is a programming error and panics.
func Get(name string) string {
	if _, ok := lookup(name); !ok && !strings.HasPrefix(name, "DETCOLL_TEST_") && !strings.HasPrefix(name, "DETCOLL_MPI_TEST_") {
		panic(fmt.Sprintf("settings: %s is not in the list (internal/core/settings)", name))
	}
	return os.Getenv(name)
}

func lookup(name string) (Var, bool) {
	for _, v := range Vars {
		if v.Name == name {
			return v, true
		}
	}
	return Var{}, false
}

// Table returns the list as Markdown: one table, a heading row per group,
// as the README shows it.
func Table() string {
	var b strings.Builder
	b.WriteString("| variable | read by | what |\n|---|---|---|\n")
	group := ""
	for _, v := range Vars {
		if v.Group != group {
			group = v.Group
			fmt.Fprintf(&b, "| **%s** | | |\n", group)
		}
		doc := v.Doc
		if v.Tuning {
			doc = "tuning knob: " + doc
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, v.ReadBy, doc)
	}
	return b.String()
}
