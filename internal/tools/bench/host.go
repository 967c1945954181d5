package bench

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// Host is detcoll's side on host memory (the cpu backend): typed slices,
// timed by the monotonic clock.
type Host struct {
	c    *detcoll.Comm
	call func() error // the prepared call; nil when none
}

// NewHost returns detcoll's side on c.
func NewHost(c *detcoll.Comm) *Host { return &Host{c: c} }

// Name is "detcoll".
func (h *Host) Name() string { return "detcoll" }

// Describe sets the device (this host's CPU) and detcoll's options.
func (h *Host) Describe(m *report.Meta) {
	m.Device = CPUModel()
	opts, err := json.Marshal(h.c.Options())
	if err != nil {
		panic("bench: detcoll.Options does not marshal: " + err.Error())
	}
	m.Options = opts
}

// Prepare allocates op's buffers at s and fills the input.
func (h *Host) Prepare(op Op, s Shape, input []byte) error {
	var err error
	switch s.DType {
	case num.BFloat16Type:
		h.call, err = hostCall[detcoll.BFloat16](h.c, op, s, input)
	case num.Float16Type:
		h.call, err = hostCall[detcoll.Float16](h.c, op, s, input)
	case num.Float32Type:
		h.call, err = hostCall[float32](h.c, op, s, input)
	case num.Float64Type:
		h.call, err = hostCall[float64](h.c, op, s, input)
	default:
		err = fmt.Errorf("bench: detcoll side: no float type %v", s.DType)
	}
	return err
}

// Barrier is the communicator's Barrier.
func (h *Host) Barrier() error { return h.c.Barrier() }

// Time runs the prepared call once; the one mode is wall clock.
func (h *Host) Time(mode string) (time.Duration, error) {
	if mode != report.ModeWallClock {
		return 0, fmt.Errorf("bench: the detcoll host side has no timing mode %q", mode)
	}
	return wallClock(h.call)
}

// Release drops the buffers.
func (h *Host) Release() { h.call = nil }

// hostCall allocates op's buffers at s in T and returns the call on them.
func hostCall[T detcoll.Float](c *detcoll.Comm, op Op, s Shape, input []byte) (func() error, error) {
	inLens, outLens := Parts(op, s)
	in := check.Typed[T](copyAligned(input))
	ins := split(in, scaled(inLens, 1, s.DType.Size()))
	outs := make([][]T, len(outLens))
	for i, n := range outLens {
		outs[i] = check.Typed[T](newTouched(n))
	}
	red := s.redOp()
	switch op {
	case AllReduce:
		return func() error { return detcoll.AllReduce(c, in, outs[0], red) }, nil
	case ReduceScatter:
		return func() error { return detcoll.ReduceScatter(c, in, outs[0], red) }, nil
	case AllGather:
		return func() error { return detcoll.AllGather(c, in, outs[0]) }, nil
	case AllGatherMany:
		return func() error { return detcoll.AllGatherMany(c, ins, outs) }, nil
	case ReduceScatterMany:
		return func() error { return detcoll.ReduceScatterMany(c, ins, outs, red) }, nil
	case Broadcast:
		buf := outs[0]
		if s.Rank == BroadcastRoot {
			buf = in
		}
		return func() error { return detcoll.Broadcast(c, buf, BroadcastRoot) }, nil
	}
	return nil, fmt.Errorf("bench: detcoll side: unknown operation %q", op)
}

// split cuts s into consecutive pieces of the given lengths.
func split[T any](s []T, lens []int) [][]T {
	out := make([][]T, len(lens))
	for i, n := range lens {
		out[i], s = s[:n:n], s[n:]
	}
	return out
}

// scaled returns each of lens times mul divided by div.
func scaled(lens []int, mul, div int) []int {
	out := make([]int, len(lens))
	for i, n := range lens {
		out[i] = n * mul / div
	}
	return out
}

// copyAligned returns an 8-byte aligned copy of b.
func copyAligned(b []byte) []byte {
	c := num.AlignedBytes(len(b))
	copy(c, b)
	return c
}

// newTouched returns n aligned bytes with every page written.
func newTouched(n int) []byte {
	b := num.AlignedBytes(n)
	touch(b)
	return b
}

// CommGroup is the Group of a detcoll communicator.
func CommGroup(c *detcoll.Comm) Group { return commGroup{c} }

type commGroup struct{ *detcoll.Comm }

func (g commGroup) AllGather(mine, all []float64) error { return detcoll.AllGather(g.Comm, mine, all) }
