package base

import "github.com/detcoll/detcoll/internal/core/num"

// DeviceBuf is a buffer in device memory: Len bytes from the device address
// Addr. Address 0 is a missing (nil) buffer unless Len is 0.
type DeviceBuf struct {
	Addr uint64
	Len  int
}

// DeviceRequest is one collective call on device memory, as the public API
// hands it to a device backend after ValidateDevice accepted it. The
// buffers are laid out per operation as in Request; Stream is the CUDA
// stream (a CUstream, 0 for the legacy default stream) the call is queued
// on.
type DeviceRequest struct {
	Op    Op
	DType num.DType
	// Red and Scalar are as Request's (the scalar in host memory), or,
	// for PreMulSum, ScalarAt is the device address of the scalar (one
	// element of DType, read when the call runs on the GPU, as NCCL's
	// ncclScalarDevice), and Scalar is empty.
	Red      num.RedOp
	Scalar   []byte
	ScalarAt uint64
	Root     int
	In       []DeviceBuf
	Out      []DeviceBuf
	Stream   uintptr
}

// ValidateDevice checks a device request with the rules of Validate, plus
// one that only device memory needs: a reduction's buffers must be aligned
// to their element size, as the GPU loads elements whole. (Gathers copy
// bytes and take any address.)
func (b Bounds) ValidateDevice(r *DeviceRequest) error {
	in, out := deviceSpans(r.In), deviceSpans(r.Out)
	scalar := len(r.Scalar)
	if r.ScalarAt != 0 {
		if scalar != 0 || r.Red != num.PreMulSum {
			return Invalidf("%v: a device scalar is for premulsum alone, without a host scalar", r.Op)
		}
		if !r.DType.Valid() {
			return Invalidf("%v: %v is no element type", r.Op, r.DType)
		}
		if r.ScalarAt%uint64(r.DType.Size()) != 0 {
			return Invalidf("%v: the device scalar at %#x is not aligned to its %d-byte %v", r.Op, r.ScalarAt, r.DType.Size(), r.DType)
		}
		scalar = r.DType.Size()
	}
	if err := b.validate(r.Op, r.Red, r.DType, r.Root, scalar, in, out); err != nil {
		return err
	}
	if r.Op.Reduces() {
		size := uint64(r.DType.Size())
		for _, b := range append(append([]DeviceBuf(nil), r.In...), r.Out...) {
			if b.Addr%size != 0 {
				return Invalidf("%v: device address %#x is not aligned to the %d-byte %v elements", r.Op, b.Addr, size, r.DType)
			}
		}
	}
	return nil
}

// Signature returns the signature of r (Seq is left for the caller).
func (r *DeviceRequest) Signature() Signature {
	return signature(r.Op, r.Red, r.DType, r.Root, deviceLens(r.In), deviceLens(r.Out))
}

// InputSizes returns the byte sizes of the buffers this rank stages.
func (r *DeviceRequest) InputSizes() []int {
	return inputSizes(r.Op, deviceLens(r.In), deviceLens(r.Out))
}

func deviceSpans(bs []DeviceBuf) []span {
	s := make([]span, len(bs))
	for i, b := range bs {
		s[i] = span{addr: b.Addr, n: b.Len, missing: b.Addr == 0 && b.Len > 0}
	}
	return s
}

func deviceLens(bs []DeviceBuf) []int {
	n := make([]int, len(bs))
	for i, b := range bs {
		n[i] = b.Len
	}
	return n
}
