package base

import "github.com/detcoll/detcoll/internal/core/num"

// Bounds are what every call of one communicator is checked against. The
// public API checks each call once, before the backend sees it (Validate,
// ValidateDevice, ValidateStage); the backends trust what passed, except
// for the order of Stage and AllReduceStaged, which they track under their
// call lock (StagedCall).
type Bounds struct {
	Rank, World int
	// Capacity is the largest staged input of one call, in bytes.
	Capacity int64
	// Reserved is the backend's own memory as this process addresses it
	// (its shared segment, or its device buffer), zero when it has none:
	// peers read and write it during calls, so no caller's buffer may lie
	// in it.
	Reserved Region
}

// Region is Len bytes from Addr, in host or device memory.
type Region struct {
	Addr uint64
	Len  int
}

func (r Region) span() span { return span{addr: r.Addr, n: r.Len} }

// ValidateStage checks a Stage (device: StageDevice) of n elements of dt:
// a staged all-reduce's input, which must fit the capacity by the rule of
// every other call (Validate).
func (b Bounds) ValidateStage(n int, dt num.DType, device bool) error {
	name := "Stage"
	if device {
		name = "StageDevice"
	}
	if !num.Sum.Supports(dt) {
		return Invalidf("%s: element type %v cannot be reduced", name, dt)
	}
	size := int64(dt.Size())
	if n < 0 || int64(n) > StagingCapacity(b.Capacity)/size {
		return Invalidf("%s: %d elements of %v (%d bytes) do not fit the capacity of %d bytes", name, n, dt, int64(n)*size, b.Capacity)
	}
	return nil
}

// StagedCall is a communicator's pending Stage: the input bytes it
// reserved, which the next call must reduce (AllReduceStaged). The zero
// value has nothing staged. It is the backend's to guard.
type StagedCall struct {
	n       int
	pending bool
}

// Pending reports whether a Stage awaits its AllReduceStaged.
func (s *StagedCall) Pending() bool { return s.pending }

// Begin records a Stage of n bytes (again: the last one counts).
func (s *StagedCall) Begin(n int) { s.n, s.pending = n, true }

// CheckRequest is Check of a host request.
func (s *StagedCall) CheckRequest(r *Request) error {
	out := 0
	if len(r.Out) > 0 {
		out = len(r.Out[0])
	}
	return s.Check(r.Op, out, false)
}

// Check refuses a call of op with out output bytes out of order: an
// AllReduceStaged with nothing staged or another count, any other call
// while a Stage is pending. device names the device calls in the message.
// An AllReduceStaged that passes ends the Stage.
func (s *StagedCall) Check(op Op, out int, device bool) error {
	stage, reduce := "Stage", "AllReduceStaged"
	if device {
		stage, reduce = "StageDevice", "AllReduceStagedDevice"
	}
	switch {
	case op == OpAllReduceStaged && !s.pending:
		return Invalidf("%v: nothing staged: call %s first", op, stage)
	case op == OpAllReduceStaged && out != s.n:
		return Invalidf("%v: output has %d bytes but %d were staged", op, out, s.n)
	case op != OpAllReduceStaged && s.pending:
		return Invalidf("%v while a staged all-reduce is pending: call %s first", op, reduce)
	}
	if op == OpAllReduceStaged {
		s.pending = false
	}
	return nil
}
