package check

import (
	"fmt"

	"github.com/detcoll/detcoll"
)

// The tests hold buffers as bytes plus a DType; these call the Typed API
// with the matching element type.

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

func TypedOrNil[T detcoll.Element](b []byte) []T {
	if b == nil {
		return nil
	}
	return Typed[T](b)
}

func TypedEach[T detcoll.Element](bs [][]byte) [][]T {
	out := make([][]T, len(bs))
	for i, b := range bs {
		out[i] = TypedOrNil[T](b)
	}
	return out
}
