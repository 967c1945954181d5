package detcoll

import (
	"encoding/binary"
	"math"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
)

// RedOp is the operator of a reduction: Sum (what a reduction does when
// given none), Avg, Max, Min, or PreMulSum(s). Every rank of a call must
// pass the same operator; a rank that passes another gets a
// *MismatchError, as do its peers. What each computes, bit for bit, is in
// the package documentation ("Reductions").
type RedOp struct {
	op     num.RedOp
	scalar float64   // PreMulSum's factor
	at     DevicePtr // PreMulSumDevice's factor, in device memory
	device bool      // made by PreMulSumDevice (at may be 0: refused)
}

// The operators besides PreMulSum.
var (
	// Sum adds, at every node of the fixed tree, rounding once in the
	// element type (integers wrap).
	Sum = RedOp{op: num.Sum}
	// Avg is Sum, then one division by the world size, rounded once
	// (integers: truncated toward zero).
	Avg = RedOp{op: num.Avg}
	// Max and Min take the larger or smaller operand at every node, -0
	// below +0; any NaN operand gives the canonical NaN.
	Max = RedOp{op: num.Max}
	Min = RedOp{op: num.Min}
)

// PreMulSum multiplies this rank's input by s, each product rounded once
// in the element type (s itself first rounded to it), then sums as Sum:
// NCCL's ncclRedOpCreatePreMulSum with a host scalar. Each rank may pass
// its own s (floating types).
func PreMulSum(s float64) RedOp { return RedOp{op: num.PreMulSum, scalar: s} }

// PreMulSumDevice is PreMulSum with this rank's factor in device memory:
// one element of the call's type at p, read when the call runs on the GPU
// (so that a replayed CUDA graph reads it anew), as NCCL's
// ncclRedOpCreatePreMulSum with ncclScalarDevice. Device calls only; p
// must stay valid until the call has run.
func PreMulSumDevice(p DevicePtr) RedOp { return RedOp{op: num.PreMulSum, at: p, device: true} }

func (o RedOp) String() string { return o.op.String() }

// redOf returns the one operator of ops (Sum when none), and, for
// PreMulSum, its scalar as one element of dt, in buf.
func redOf(ops []RedOp, dt DType, buf *[8]byte) (num.RedOp, []byte, error) {
	switch len(ops) {
	case 0:
		return num.Sum, nil, nil
	case 1:
	default:
		return 0, nil, base.Invalidf("%d reduction operators; pass at most one", len(ops))
	}
	o := ops[0]
	if o.op != num.PreMulSum {
		return o.op, nil, nil
	}
	if o.device {
		return 0, nil, base.Invalidf("PreMulSumDevice: a device scalar is for the Device calls (host memory: PreMulSum)")
	}
	b := buf[:dt.Size()]
	switch dt {
	case TypeBFloat16:
		binary.LittleEndian.PutUint16(b, uint16(num.BFloat16FromFloat64(o.scalar)))
	case TypeFloat16:
		binary.LittleEndian.PutUint16(b, uint16(num.Float16FromFloat64(o.scalar)))
	case TypeFloat32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(o.scalar)))
	case TypeFloat64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(o.scalar))
	default:
		// Validation refuses PreMulSum of dt, naming both.
		return o.op, nil, nil
	}
	return o.op, b, nil
}
