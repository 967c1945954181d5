package ncclshim

import (
	"fmt"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// Handle is an ncclComm_t: the real NCCL communicator's address.
type Handle uintptr

// detcollType is dt as a detcoll element type that detcoll reduces, if it
// is one: NCCL's four float types, each as itself (float16 served as
// bfloat16 would give other bits), and its six integer types. NCCL's
// 8-bit floats (2.24 and later) are not detcoll's.
func detcollType(dt nccl.DataType) (detcoll.DType, bool) {
	switch dt {
	case nccl.Bfloat16:
		return detcoll.TypeBFloat16, true
	case nccl.Float16:
		return detcoll.TypeFloat16, true
	case nccl.Float32:
		return detcoll.TypeFloat32, true
	case nccl.Float64:
		return detcoll.TypeFloat64, true
	case nccl.Int8:
		return detcoll.TypeInt8, true
	case nccl.Uint8:
		return detcoll.TypeUint8, true
	case nccl.Int32:
		return detcoll.TypeInt32, true
	case nccl.Uint32:
		return detcoll.TypeUint32, true
	case nccl.Int64:
		return detcoll.TypeInt64, true
	case nccl.Uint64:
		return detcoll.TypeUint64, true
	}
	return 0, false
}

// integer reports whether dt is one of NCCL's integer types.
func integer(dt nccl.DataType) bool {
	switch dt {
	case nccl.Int8, nccl.Uint8, nccl.Int32, nccl.Uint32, nccl.Int64, nccl.Uint64:
		return true
	}
	return false
}

// numOps is ncclNumOps: the built-in ops are below it, the ones
// ncclRedOpCreatePreMulSum makes from it up.
const numOps nccl.RedOp = 5

// premulSum is the op a call's record carries (callKey) for an operator
// made through the library's ncclRedOpCreatePreMulSum: NCCL numbers those
// from ncclNumOps up per communicator and reuses a number once its
// operator is destroyed, so the record names the kind, not the number.
// NCCL's ops are never negative.
const premulSum nccl.RedOp = -1

// opName is op as the record names it.
func opName(op nccl.RedOp) string {
	if op == premulSum {
		return "premulsum"
	}
	return op.String()
}

// exact reports whether NCCL's reduction op of dt gives the same bits in
// any order, so that a call detcoll cannot serve costs no determinism when
// handed on: integer sums and products wrap modulo 2^n, which is
// associative and commutative, and so does a pre-multiplied integer sum;
// integer min and max are order-free; an integer average is the exact sum
// divided once (NCCL's FuncSumPostDiv). Floating-point min and max are not
// here: which NaN payload or which zero NCCL's return can depend on the
// order. A dynamic op the library did not see made is not either: its
// kind is unknown.
func exact(dt nccl.DataType, op nccl.RedOp) bool {
	if !integer(dt) {
		return false
	}
	switch op {
	case nccl.Sum, nccl.Prod, nccl.Max, nccl.Min, nccl.Avg, premulSum:
		return true
	}
	return false
}

// The operators of NCCL's built-in ops, as the variadic argument of
// detcoll's device calls: made once, so that a call allocates none. A sum
// passes none (detcoll's default).
var (
	avgOps = []detcoll.RedOp{detcoll.Avg}
	maxOps = []detcoll.RedOp{detcoll.Max}
	minOps = []detcoll.RedOp{detcoll.Min}
)

// operator is what the shim makes of a call's op and element type.
type operator struct {
	key callKey
	dt  detcoll.DType
	// ops is the operator for detcoll's device calls: nil for a sum.
	ops []detcoll.RedOp
	// why is set when detcoll cannot serve the call: the reason it is
	// handed (or refused).
	why string
}

// operatorOf resolves call's op on c (nil: a communicator the shim does
// not know, whose calls are handed whatever their op). A PreMulSum op is
// resolved now, at the call, since NCCL lets the caller destroy it as
// soon as the call returns, before a group's end runs it.
func (s *Shim) operatorOf(c *comm, call Call) operator {
	o := operator{key: callKey{call.Kind, call.DType, call.Op}}
	dt, ok := detcollType(call.DType)
	o.dt = dt
	switch {
	case call.Op >= numOps:
		// A dynamic op: NCCL's only kind is ncclRedOpCreatePreMulSum's.
		var p *premul
		if c != nil {
			p = c.premulOf(call.Op)
		}
		switch {
		case p == nil:
			o.why = fmt.Sprintf("%v of %v with %v, an operator not made through libdetcoll-nccl's ncclRedOpCreatePreMulSum (its factor is unknown)", call.Kind, call.DType, call.Op)
		case p.dt != call.DType:
			o.key.op = premulSum
			o.why = fmt.Sprintf("%v of %v with a premulsum operator made for %v", call.Kind, call.DType, p.dt)
		case p.ops == nil:
			o.key.op = premulSum
			o.why = fmt.Sprintf("%v of %v with premulsum: %s", call.Kind, call.DType, p.why)
		default:
			o.key.op, o.ops = premulSum, p.ops
		}
		return o
	case !ok:
		o.why = fmt.Sprintf("%v of %v is not one detcoll makes deterministic", call.Kind, call.DType)
	case call.Op == nccl.Sum:
	case call.Op == nccl.Avg:
		o.ops = avgOps
	case call.Op == nccl.Max:
		o.ops = maxOps
	case call.Op == nccl.Min:
		o.ops = minOps
	case call.Op == nccl.Prod:
		// detcoll has no product: integer products are exact in any
		// order (handed silently), and no gradient path multiplies.
		o.why = fmt.Sprintf("%v of %v with prod is not one detcoll makes deterministic (detcoll has no product)", call.Kind, call.DType)
	default:
		o.why = fmt.Sprintf("%v of %v with %v is not one detcoll makes deterministic", call.Kind, call.DType, call.Op)
	}
	return o
}
