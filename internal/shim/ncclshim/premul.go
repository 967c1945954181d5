package ncclshim

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/nccl"
	"github.com/detcoll/detcoll/internal/core/num"
)

// PreMulSum operators. ncclRedOpCreatePreMulSum makes an operator of one
// communicator and one element type: every rank's input times the rank's
// own factor, then summed (torch's PREMUL_SUM, which FSDP uses to divide
// its gradients). The C boundary creates it with the real NCCL first, so
// that the op's number is NCCL's own and a call handed on with it works,
// then tells the shim (CreatePreMulSum), which keeps the factor under that
// number until ncclRedOpDestroy (DestroyRedOp). A call with the op, of
// the op's type, is served with detcoll's PreMulSum: the factor as NCCL
// read it at creation (ncclScalarHostImmediate), or its device address,
// read when the call runs (ncclScalarDevice: a replayed CUDA graph reads
// it anew, as NCCL's kernels do).

// ScalarResidence is an ncclScalarResidence_t: where a PreMulSum factor is.
type ScalarResidence int

// NCCL's residences.
const (
	// ScalarDevice: one element in device memory, read when the call runs.
	ScalarDevice ScalarResidence = 0
	// ScalarHostImmediate: one element in host memory, read at creation.
	ScalarHostImmediate ScalarResidence = 1
)

// premul is an operator made by ncclRedOpCreatePreMulSum.
type premul struct {
	dt nccl.DataType
	// ops is detcoll's operator, made once; nil where detcoll cannot
	// serve the op (why says so).
	ops []detcoll.RedOp
	why string
}

// ScalarSize is how many bytes of a host factor of dt CreatePreMulSum
// needs: one element of a type detcoll pre-multiplies, else none.
func ScalarSize(dt nccl.DataType) int {
	switch dt {
	case nccl.Bfloat16, nccl.Float16:
		return 2
	case nccl.Float32:
		return 4
	case nccl.Float64:
		return 8
	}
	return 0
}

// CreatePreMulSum records op, which the real NCCL's
// ncclRedOpCreatePreMulSum made on h for dt: host holds the factor's
// bytes (ScalarSize(dt) of them) when residence is ScalarHostImmediate,
// at is its device address when it is ScalarDevice. An op of a
// communicator the shim does not know is not recorded: its calls are
// handed whatever their op.
func (s *Shim) CreatePreMulSum(h Handle, op nccl.RedOp, dt nccl.DataType, residence ScalarResidence, host []byte, at uintptr) {
	c := s.lookup(h)
	if c == nil {
		return
	}
	p := &premul{dt: dt}
	n := ScalarSize(dt)
	switch {
	case n == 0:
		p.why = "detcoll pre-multiplies floating types only"
	case residence == ScalarDevice && at == 0:
		// detcoll would read a zero address as "no device factor".
		p.why = "its device factor is at address 0"
	case residence == ScalarDevice:
		p.ops = []detcoll.RedOp{detcoll.PreMulSumDevice(detcoll.DevicePtr(at))}
	case residence == ScalarHostImmediate && len(host) == n:
		// The element as a float64, which detcoll rounds back to dt:
		// exact, since every value of dt is one of float64.
		p.ops = []detcoll.RedOp{detcoll.PreMulSum(scalarValue(dt, host))}
	default:
		p.why = fmt.Sprintf("its factor's residence %d is not NCCL's device (0) or host (1)", residence)
	}
	c.opsMu.Lock()
	defer c.opsMu.Unlock()
	if c.premuls == nil {
		c.premuls = map[nccl.RedOp]*premul{}
	}
	c.premuls[op] = p
}

// DestroyRedOp forgets op of h: ncclRedOpDestroy, made inside group (0:
// none). It reports whether the shim destroys the real NCCL's op itself,
// later: NCCL lets an operator be destroyed as soon as the call that takes
// it returns, but a call the shim deferred to its group's end may still be
// handed to the real NCCL there (its communicator's setup failing), with
// the op's number, which must name this operator then, not a freed or
// reused one. Otherwise the caller destroys it now (and NCCL may hand its
// number to the next operator made).
func (s *Shim) DestroyRedOp(h Handle, op nccl.RedOp, group uint64) (later bool) {
	if group != 0 {
		later = s.groups.destroyLater(group, h, op)
	}
	c := s.lookup(h)
	if c == nil {
		return later
	}
	c.opsMu.Lock()
	defer c.opsMu.Unlock()
	delete(c.premuls, op)
	return later
}

// premulOf is c's operator op, or nil.
func (c *comm) premulOf(op nccl.RedOp) *premul {
	c.opsMu.Lock()
	defer c.opsMu.Unlock()
	return c.premuls[op]
}

// scalarValue is the value of one element of the float type dt, b its
// bytes (little endian, as the GPUs and hosts NCCL runs on store it).
func scalarValue(dt nccl.DataType, b []byte) float64 {
	switch dt {
	case nccl.Bfloat16:
		return num.BFloat16(binary.LittleEndian.Uint16(b)).Float64()
	case nccl.Float16:
		return num.Float16(binary.LittleEndian.Uint16(b)).Float64()
	case nccl.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}
