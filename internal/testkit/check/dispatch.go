package check

import (
	"fmt"
	"unsafe"

	"github.com/detcoll/detcoll"
)

// The checks hold buffers as bytes plus a DType; these call the typed API
// with the matching element type.

// Typed views raw test bytes as the element type T. The test buffers are
// 8-byte aligned plus an offset that is a multiple of the element size.
func Typed[T detcoll.Element](b []byte) []T {
	var zero T
	if len(b) == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(zero)))
}

// RawBytes views a Typed slice as its bytes.
func RawBytes[T detcoll.Element](s []T) []byte {
	var zero T
	if len(s) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
}

// AllReduce all-reduces in into out, elements of the float type dt.
func AllReduce(c *detcoll.Comm, dt detcoll.DType, in, out []byte) error {
	switch dt {
	case detcoll.TypeBFloat16:
		return detcoll.AllReduce(c, TypedOrNil[detcoll.BFloat16](in), TypedOrNil[detcoll.BFloat16](out))
	case detcoll.TypeFloat16:
		return detcoll.AllReduce(c, TypedOrNil[detcoll.Float16](in), TypedOrNil[detcoll.Float16](out))
	case detcoll.TypeFloat32:
		return detcoll.AllReduce(c, TypedOrNil[float32](in), TypedOrNil[float32](out))
	case detcoll.TypeFloat64:
		return detcoll.AllReduce(c, TypedOrNil[float64](in), TypedOrNil[float64](out))
	}
	return fmt.Errorf("no float type %v", dt)
}

// ReduceScatter reduce-scatters in into out, elements of the float type dt.
func ReduceScatter(c *detcoll.Comm, dt detcoll.DType, in, out []byte) error {
	switch dt {
	case detcoll.TypeBFloat16:
		return detcoll.ReduceScatter(c, TypedOrNil[detcoll.BFloat16](in), TypedOrNil[detcoll.BFloat16](out))
	case detcoll.TypeFloat16:
		return detcoll.ReduceScatter(c, TypedOrNil[detcoll.Float16](in), TypedOrNil[detcoll.Float16](out))
	case detcoll.TypeFloat32:
		return detcoll.ReduceScatter(c, TypedOrNil[float32](in), TypedOrNil[float32](out))
	case detcoll.TypeFloat64:
		return detcoll.ReduceScatter(c, TypedOrNil[float64](in), TypedOrNil[float64](out))
	}
	return fmt.Errorf("no float type %v", dt)
}

// ReduceScatterMany reduce-scatters each of ins into the out of its index.
func ReduceScatterMany(c *detcoll.Comm, dt detcoll.DType, ins, outs [][]byte) error {
	switch dt {
	case detcoll.TypeBFloat16:
		return detcoll.ReduceScatterMany(c, TypedEach[detcoll.BFloat16](ins), TypedEach[detcoll.BFloat16](outs))
	case detcoll.TypeFloat16:
		return detcoll.ReduceScatterMany(c, TypedEach[detcoll.Float16](ins), TypedEach[detcoll.Float16](outs))
	case detcoll.TypeFloat32:
		return detcoll.ReduceScatterMany(c, TypedEach[float32](ins), TypedEach[float32](outs))
	case detcoll.TypeFloat64:
		return detcoll.ReduceScatterMany(c, TypedEach[float64](ins), TypedEach[float64](outs))
	}
	return fmt.Errorf("no float type %v", dt)
}

// StagedAllReduce writes in into the staging view, then reduces into out.
func StagedAllReduce(c *detcoll.Comm, dt detcoll.DType, in, out []byte) error {
	switch dt {
	case detcoll.TypeBFloat16:
		return staged(c, Typed[detcoll.BFloat16](in), Typed[detcoll.BFloat16](out))
	case detcoll.TypeFloat16:
		return staged(c, Typed[detcoll.Float16](in), Typed[detcoll.Float16](out))
	case detcoll.TypeFloat32:
		return staged(c, Typed[float32](in), Typed[float32](out))
	case detcoll.TypeFloat64:
		return staged(c, Typed[float64](in), Typed[float64](out))
	}
	return fmt.Errorf("no float type %v", dt)
}

func staged[T detcoll.Float](c *detcoll.Comm, in, out []T) error {
	view, err := detcoll.Stage[T](c, len(in))
	if err != nil {
		return err
	}
	copy(view, in)
	return detcoll.AllReduceStaged(c, out)
}

// AllGather copies bytes with the element type dt (any type: gathers are
// byte exact).
func AllGather(c *detcoll.Comm, dt detcoll.DType, in, out []byte) error {
	switch dt.Size() {
	case 1:
		return detcoll.AllGather(c, TypedOrNil[uint8](in), TypedOrNil[uint8](out))
	case 2:
		if dt == detcoll.TypeBFloat16 {
			return detcoll.AllGather(c, TypedOrNil[detcoll.BFloat16](in), TypedOrNil[detcoll.BFloat16](out))
		}
		return detcoll.AllGather(c, TypedOrNil[uint16](in), TypedOrNil[uint16](out))
	case 4:
		return detcoll.AllGather(c, TypedOrNil[float32](in), TypedOrNil[float32](out))
	case 8:
		return detcoll.AllGather(c, TypedOrNil[int64](in), TypedOrNil[int64](out))
	}
	return fmt.Errorf("no type %v", dt)
}

// TypedOrNil is Typed, but nil stays nil (a bad-input test's nil buffer).
func TypedOrNil[T detcoll.Element](b []byte) []T {
	if b == nil {
		return nil
	}
	return Typed[T](b)
}

// TypedEach is TypedOrNil of each buffer.
func TypedEach[T detcoll.Element](bs [][]byte) [][]T {
	out := make([][]T, len(bs))
	for i, b := range bs {
		out[i] = TypedOrNil[T](b)
	}
	return out
}

// AllGatherMany gathers each of ins into the out of its index, with the
// element type dt.
func AllGatherMany(c *detcoll.Comm, dt detcoll.DType, ins, outs [][]byte) error {
	switch dt.Size() {
	case 1:
		return detcoll.AllGatherMany(c, TypedEach[uint8](ins), TypedEach[uint8](outs))
	case 2:
		if dt == detcoll.TypeBFloat16 {
			return detcoll.AllGatherMany(c, TypedEach[detcoll.BFloat16](ins), TypedEach[detcoll.BFloat16](outs))
		}
		return detcoll.AllGatherMany(c, TypedEach[uint16](ins), TypedEach[uint16](outs))
	case 4:
		return detcoll.AllGatherMany(c, TypedEach[float32](ins), TypedEach[float32](outs))
	case 8:
		return detcoll.AllGatherMany(c, TypedEach[int64](ins), TypedEach[int64](outs))
	}
	return fmt.Errorf("no type %v", dt)
}

// Broadcast broadcasts buf from root, with the element type dt.
func Broadcast(c *detcoll.Comm, dt detcoll.DType, buf []byte, root int) error {
	switch dt.Size() {
	case 1:
		return detcoll.Broadcast(c, TypedOrNil[uint8](buf), root)
	case 2:
		if dt == detcoll.TypeBFloat16 {
			return detcoll.Broadcast(c, TypedOrNil[detcoll.BFloat16](buf), root)
		}
		return detcoll.Broadcast(c, TypedOrNil[uint16](buf), root)
	case 4:
		return detcoll.Broadcast(c, TypedOrNil[float32](buf), root)
	case 8:
		return detcoll.Broadcast(c, TypedOrNil[int64](buf), root)
	}
	return fmt.Errorf("no type %v", dt)
}
