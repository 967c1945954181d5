package bench

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/binding/nccl"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// NCCLDeterministicEnv are the NCCL settings that deterministic users set
// today (torchtitan, Megatron, vLLM's batch-invariant mode): one ring, the
// Simple protocol, one channel. The performance anchors measure NCCL with
// them too.
var NCCLDeterministicEnv = []string{"NCCL_ALGO=Ring", "NCCL_PROTO=Simple", "NCCL_MIN_NCHANNELS=1", "NCCL_MAX_NCHANNELS=1"}

// SetNCCLDeterministic puts NCCLDeterministicEnv into this process's
// environment, replacing other values of those variables. NCCL reads them
// when it initialises: call it before NCCLUniqueID and NewNCCL.
func SetNCCLDeterministic() error {
	for _, kv := range NCCLDeterministicEnv {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("bench: set %s: %w", kv, err)
		}
	}
	return nil
}

// ncclEnv returns the NCCL_* variables of env, sorted.
func ncclEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "NCCL_") {
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}

// ncclDeterministic reports whether env holds every setting of
// NCCLDeterministicEnv.
func ncclDeterministic(env []string) bool {
	for _, kv := range NCCLDeterministicEnv {
		if !slices.Contains(env, kv) {
			return false
		}
	}
	return true
}

// NCCLUniqueID gives every rank of coord (a communicator on host memory,
// such as a cpu one) the same new NCCL unique id: rank 0 asks NCCL for it
// and broadcasts it. It loads NCCL.
func NCCLUniqueID(coord *detcoll.Comm) (nccl.UniqueID, error) {
	var id nccl.UniqueID
	if err := nccl.Load(); err != nil {
		return id, err
	}
	if coord.Rank() == 0 {
		var err error
		if id, err = nccl.GetUniqueID(); err != nil {
			return id, err
		}
	}
	err := detcoll.Broadcast(coord, id[:], 0)
	return id, err
}

// NCCL is the reference side on a GPU: NCCL called directly, on device
// buffers and a stream of its own, timed like detcoll's side. Reductions
// sum in the element type; the *Many forms make one NCCL call per buffer
// inside one ncclGroupStart/End (one launch, as PyTorch's coalesced
// collectives do).
//
// Like CUDA, it keeps the goroutine that made it locked to its thread
// until Close.
type NCCL struct {
	g        *gpuSide
	comm     nccl.Comm
	rank     int
	word     driver.DevicePtr // the barrier's all-reduce word
	version  string
	env      []string // NCCL_* variables when the communicator was made
	lib      string
	disposed bool // comm destroyed or aborted
	// premuls are NCCL's PreMulSum operators of this rank's factor, one
	// per element type, made at the first call that takes one.
	premuls map[nccl.DataType]nccl.RedOp
}

// NewNCCL makes this rank's NCCL communicator of world ranks on the CUDA
// device ordinal device, from the id every rank got from NCCLUniqueID. It
// is collective: every rank must call it. NCCL's settings are read from
// the environment now.
func NewNCCL(device, rank, world int, id nccl.UniqueID) (*NCCL, error) {
	if err := nccl.Load(); err != nil {
		return nil, err
	}
	g, err := openGPUSide(device)
	if err != nil {
		return nil, fmt.Errorf("bench: NCCL side on GPU %d: %w", device, err)
	}
	n := &NCCL{g: g, rank: rank, env: ncclEnv(os.Environ()), lib: nccl.Library()}
	fail := func(err error) (*NCCL, error) {
		n.Close()
		return nil, fmt.Errorf("bench: NCCL side on GPU %d: %w", device, err)
	}
	v, err := nccl.Version()
	if err != nil {
		return fail(err)
	}
	n.version = fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
	// The barrier's word stays outside the prepared call's buffers.
	if n.word, err = driver.MemAlloc(4); err != nil {
		return fail(err)
	}
	if err := driver.MemsetD8(n.word, 1, 4); err != nil {
		return fail(err)
	}
	if n.comm, err = nccl.CommInitRank(world, id, rank); err != nil {
		return fail(err)
	}
	return n, nil
}

// Name is "nccl".
func (n *NCCL) Name() string { return report.ReferenceNCCL }

// Describe sets the NCCL version and notes NCCL's settings.
func (n *NCCL) Describe(m *report.Meta) {
	m.NCCLVersion = n.version
	settings := "default settings (NCCL picks algorithm, protocol and channels by size)"
	if ncclDeterministic(n.env) {
		settings = "deterministic settings " + strings.Join(NCCLDeterministicEnv, " ") + " (--nccl-deterministic)"
	}
	env := "none"
	if len(n.env) > 0 {
		env = strings.Join(n.env, " ")
	}
	m.Notes = append(m.Notes,
		fmt.Sprintf("NCCL %s (%s) with %s; NCCL_* environment at init: %s", n.version, n.lib, settings, env),
		"NCCL: called directly on a non-blocking stream of the same primary context, out of place; its barrier is an ncclAllReduce (max) of one int32 and a stream synchronisation; all_gather_many and reduce_scatter_many are one call per buffer inside ncclGroupStart/End")
	if m.Reduction == num.PreMulSum.String() {
		m.Notes = append(m.Notes, "NCCL's premulsum: an operator of ncclRedOpCreatePreMulSum per rank with the rank's factor in host memory, the factor detcoll's side takes")
	}
}

// Prepare allocates op's device buffers at s, copies the input in and
// poisons the outputs.
func (n *NCCL) Prepare(op Op, s Shape, input []byte) error {
	t, ok := nccl.DataTypeOf(s.DType)
	if !ok {
		return fmt.Errorf("bench: NCCL has no %v", s.DType)
	}
	ins, outs, err := n.g.buffers(op, s, input)
	if err != nil {
		return err
	}
	inLens, outLens := Parts(op, s)
	size, comm, st := s.DType.Size(), n.comm, n.g.s
	red, err := n.redOp(s, t)
	if err != nil {
		n.g.release()
		return err
	}
	var call func() error
	switch op {
	case AllReduce:
		call = func() error { return comm.AllReduce(ins[0], outs[0], s.Elements(), t, red, st) }
	case ReduceScatter:
		call = func() error { return comm.ReduceScatter(ins[0], outs[0], outLens[0]/size, t, red, st) }
	case AllGather:
		call = func() error { return comm.AllGather(ins[0], outs[0], inLens[0]/size, t, st) }
	case AllGatherMany:
		call = grouped(len(ins), func(k int) error { return comm.AllGather(ins[k], outs[k], inLens[k]/size, t, st) })
	case ReduceScatterMany:
		call = grouped(len(ins), func(k int) error {
			return comm.ReduceScatter(ins[k], outs[k], outLens[k]/size, t, red, st)
		})
	case Broadcast:
		buf := outs[0]
		if s.Rank == BroadcastRoot {
			buf = ins[0]
		}
		call = func() error { return comm.Broadcast(buf, buf, s.Elements(), t, BroadcastRoot, st) }
	default:
		n.g.release()
		return fmt.Errorf("bench: NCCL side: unknown operation %q", op)
	}
	n.g.prepared(s.Bytes, call)
	return nil
}

// grouped returns a call that makes k calls of one inside an NCCL group.
func grouped(k int, one func(int) error) func() error {
	return func() error {
		if err := nccl.GroupStart(); err != nil {
			return err
		}
		var first error
		for i := range k {
			if err := one(i); err != nil && first == nil {
				first = err
			}
		}
		if err := nccl.GroupEnd(); first == nil {
			first = err
		}
		return first
	}
}

// Barrier all-reduces one word and waits for it.
func (n *NCCL) Barrier() error {
	if err := n.comm.AllReduce(n.word, n.word, 1, nccl.Int32, nccl.Max, n.g.s); err != nil {
		return err
	}
	return n.g.s.Synchronize()
}

// Time takes one sample in mode: report.ModeSynchronised, ModePipelined or
// ModeGraph.
func (n *NCCL) Time(mode string) (time.Duration, error) { return n.g.time(mode) }

// Release frees the prepared call's buffers and graph.
func (n *NCCL) Release() { n.g.release() }

// Abort ends the NCCL communicator at once, without waiting for peers:
// for when a run failed. Close still frees the rest.
func (n *NCCL) Abort() {
	if n.comm != 0 && !n.disposed {
		n.comm.Abort()
		n.disposed = true
	}
}

// Close destroys the NCCL communicator (after its queued work, so every
// rank should close it) and frees the rest. Later calls do nothing.
func (n *NCCL) Close() error {
	if n.g == nil {
		return nil
	}
	var err error
	if n.comm != 0 && !n.disposed {
		for _, op := range n.premuls {
			n.comm.DestroyRedOp(op)
		}
		err = n.comm.Destroy()
		n.disposed = true
	}
	if n.word != 0 {
		driver.MemFree(n.word)
	}
	n.g.close()
	n.g = nil
	return err
}

// redOp is NCCL's operator timed against s's: its own for Avg, Max and
// Min; for PreMulSum one NCCL makes with this rank's factor (the one
// detcoll's side takes, check.PremulFactor), in host memory.
func (n *NCCL) redOp(s Shape, t nccl.DataType) (nccl.RedOp, error) {
	if s.Red != num.PreMulSum {
		return ncclOp(s.Red), nil
	}
	if op, ok := n.premuls[t]; ok {
		return op, nil
	}
	op, err := n.comm.CreatePreMulSum(check.ScalarBytes(s.DType, check.PremulFactor(s.Rank)), t)
	if err != nil {
		return 0, fmt.Errorf("bench: NCCL side: %w", err)
	}
	if n.premuls == nil {
		n.premuls = map[nccl.DataType]nccl.RedOp{}
	}
	n.premuls[t] = op
	return op, nil
}

// ncclOp is NCCL's built-in operator timed against red: its own for Avg,
// Max and Min, else its sum.
func ncclOp(red num.RedOp) nccl.RedOp {
	switch red {
	case num.Avg:
		return nccl.Avg
	case num.Max:
		return nccl.Max
	case num.Min:
		return nccl.Min
	}
	return nccl.Sum
}
