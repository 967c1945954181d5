package report

import (
	"encoding/json"
	"fmt"
)

// Kind and SchemaVersion identify the format. A change that old readers
// would misread bumps SchemaVersion; Read refuses versions it does not know.
const (
	Kind          = "detcoll_bench"
	SchemaVersion = 1
)

// The timing modes. The cpu backend times each call by the monotonic
// clock; the cuda backend reports the three modes of the performance
// anchors and a fourth: device events around one call with the host waiting for each
// (synchronised), many calls enqueued back to back between two events
// (pipelined), many calls replayed from one CUDA graph (graph), and the
// same replay queued right behind an untimed one (graph_steady). The last
// three are per call: the span divided by the calls in it. graph_steady
// leaves out what graph includes of the ranks' start: after the barrier
// before a sample each rank's host launches its replay when it wakes, and
// the first call waits for the last rank's; behind a replay that lined the
// ranks up, the span is the calls' own.
const (
	ModeWallClock    = "wall_clock"
	ModeSynchronised = "synchronised"
	ModePipelined    = "pipelined"
	ModeGraph        = "graph"
	ModeGraphSteady  = "graph_steady"
)

// Modes lists every timing mode a report may hold.
var Modes = []string{ModeWallClock, ModeSynchronised, ModePipelined, ModeGraph, ModeGraphSteady}

// The references a report may compare detcoll with.
const (
	ReferenceNone = "none"
	ReferenceMPI  = "mpi"  // Open MPI, on the cpu backend
	ReferenceNCCL = "nccl" // NCCL, on the cuda backend
	// ReferenceSymmMem is PyTorch's symmetric-memory all-reduce, a
	// fixed-order alternative on GPUs; its reports come from a script of
	// its own (plotted as an extra reference: detcoll plot --extra).
	ReferenceSymmMem = "symm_mem"
)

// The ways ranks may share a GPU (Meta.GPUSharing).
const (
	SharingMPS        = "mps"
	SharingTimeSliced = "time-sliced"
)

// Moves is what one rank's kernels move for one call, in bytes, by the
// plan: reads and writes of its own GPU's memory and of its peers'. It
// counts the payload only (no control words).
type Moves struct {
	Path       string `json:"path"` // the protocol path: ll, push, one-shot, ...
	LocalRead  int64  `json:"local_read"`
	LocalWrite int64  `json:"local_write"`
	PeerRead   int64  `json:"peer_read"`
	PeerWrite  int64  `json:"peer_write"`
}

// Total is every byte read or written.
func (m *Moves) Total() int64 { return m.LocalRead + m.LocalWrite + m.PeerRead + m.PeerWrite }

// DeviceLabel is the device as plots and tables name it: Device, and how
// the ranks shared it when they did ("NVIDIA H200, 2 ranks per GPU under
// MPS"), so that no time from a shared GPU passes for one from GPUs of
// their own.
func (m *Meta) DeviceLabel() string {
	switch m.GPUSharing {
	case SharingMPS:
		return fmt.Sprintf("%s, %d ranks per GPU under MPS", m.Device, m.RanksPerGPU)
	case SharingTimeSliced:
		return fmt.Sprintf("%s, %d ranks per GPU time-sliced", m.Device, m.RanksPerGPU)
	}
	return m.Device
}

// Report is one run of detcoll bench.
type Report struct {
	Kind          string `json:"kind"`
	SchemaVersion int    `json:"schema_version"`
	Meta          Meta   `json:"metadata"`
	Rows          []Row  `json:"rows"`
}

// Meta says what ran, where and how. Version fields that do not apply to
// the run (CUDA on the cpu backend, MPI without the MPI reference) are
// empty, never absent.
type Meta struct {
	WorldSize int    `json:"world_size"`
	DType     string `json:"dtype"`   // element type of detcoll's calls: bfloat16, float16, float32, float64
	Backend   string `json:"backend"` // cpu or cuda
	// Device is the CPU model (and CPU count) on the cpu backend, the GPU's
	// name on cuda.
	Device        string `json:"device"`
	DriverVersion string `json:"driver_version"`
	CUDAVersion   string `json:"cuda_version"`
	NCCLVersion   string `json:"nccl_version"`
	MPIVersion    string `json:"mpi_version"`

	// Reference is what detcoll is compared with: ReferenceMPI,
	// ReferenceNCCL, ReferenceSymmMem or ReferenceNone (then rows hold no
	// reference times).
	Reference string `json:"reference"`
	// ReferenceDType is the element type the reference reduced in, when it
	// differs from DType (Open MPI has no bfloat16 or float16: it sums
	// float32 of the same element count); empty when the same.
	ReferenceDType string `json:"reference_dtype"`
	// Notes are free text on how to read the numbers (such as the above).
	Notes []string `json:"notes"`

	// GPUSharing says how the ranks shared GPUs, when they did: SharingMPS
	// (kernels of several processes run at once, so the times are the
	// protocol's and HBM's, not NVLink's) or SharingTimeSliced (each
	// rank's kernels run in turn: the times measure nothing). Empty when
	// every rank had a GPU of its own, and on the cpu backend.
	GPUSharing string `json:"gpu_sharing,omitempty"`
	// RanksPerGPU is the most ranks on one GPU, when they shared.
	RanksPerGPU int `json:"ranks_per_gpu,omitempty"`

	GoVersion string `json:"go_version"`
	Commit    string `json:"commit"` // detcoll's; "unknown" when no source says
	// Reduction is the reductions' operator (avg, premulsum, max, min);
	// empty for the sum, and in reports written before operators.
	Reduction  string   `json:"reduction,omitempty"`
	Warmup     int      `json:"warmup"` // untimed samples before the timed ones, per row and mode
	Iterations int      `json:"iterations"`
	Modes      []string `json:"timing_modes"`
	Seed       uint64   `json:"seed"` // of the random inputs
	Date       string   `json:"date"` // start of the run, UTC, RFC 3339
	Hostname   string   `json:"hostname"`
	// Options is detcoll.Options of the run as JSON (an object).
	Options json.RawMessage `json:"options"`
}

// Row is one operation at one input size in one timing mode.
type Row struct {
	Operation string `json:"operation"` // all_reduce, reduce_scatter, all_gather, ...
	Mode      string `json:"mode"`
	// InputBytesPerRank is what each rank passes in: for reduce-scatter
	// the whole input, the world size times the output.
	InputBytesPerRank int64 `json:"input_bytes_per_rank"`

	// DetcollUS and ReferenceUS are the slowest rank's median time per
	// call in microseconds: Slowest of the samples. ReferenceUS is 0 when
	// the report has no reference.
	DetcollUS   float64 `json:"detcoll_us"`
	ReferenceUS float64 `json:"reference_us"`
	// The spread and the bus bandwidths are summary fields that a report
	// may lack (0 then, and absent from the JSON: reports written before
	// they existed, and tools/symm_mem.py's); Read fills them in, so every
	// report that reads has them (Row.Summarise).
	//
	// DetcollP10US and DetcollP90US are each rank's 10th and 90th
	// percentile time in microseconds, the largest over the ranks, as
	// DetcollUS is of medians: SlowestPercentile of the samples. Likewise
	// ReferenceP10US and ReferenceP90US, 0 when the report has no
	// reference.
	DetcollP10US   float64 `json:"detcoll_p10_us,omitempty"`
	DetcollP90US   float64 `json:"detcoll_p90_us,omitempty"`
	ReferenceP10US float64 `json:"reference_p10_us,omitempty"`
	ReferenceP90US float64 `json:"reference_p90_us,omitempty"`
	// DetcollBusBW and ReferenceBusBW are the bus bandwidths in GB/s at
	// DetcollUS and ReferenceUS, as nccl-tests defines them (Bandwidth); 0
	// where there is none (no time, an operation without one).
	DetcollBusBW   float64 `json:"detcoll_busbw_gbps,omitempty"`
	ReferenceBusBW float64 `json:"reference_busbw_gbps,omitempty"`
	// DetcollMoves is what rank 0's kernels move per detcoll call, by the
	// plan (the cuda backend; nil elsewhere and in older reports).
	DetcollMoves *Moves `json:"detcoll_moves,omitempty"`
	// DetcollSamplesUS[r] holds rank r's timed samples in microseconds,
	// Iterations of them, in the order taken; likewise ReferenceSamplesUS,
	// which is empty when the report has no reference.
	DetcollSamplesUS   [][]float64 `json:"detcoll_samples_us"`
	ReferenceSamplesUS [][]float64 `json:"reference_samples_us"`
}
