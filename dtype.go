package detcoll

import (
	"reflect"
	"unsafe"

	"github.com/detcoll/detcoll/internal/core/num"
)

// BFloat16 is a bfloat16 value as its bits (the upper half of a float32).
type BFloat16 = num.BFloat16

// Float16 is an IEEE 754 binary16 value as its bits.
type Float16 = num.Float16

// NewBFloat16 rounds f to the nearest bfloat16 (ties to even).
func NewBFloat16(f float32) BFloat16 { return num.BFloat16FromFloat32(f) }

// NewFloat16 rounds f to the nearest float16 (ties to even).
func NewFloat16(f float32) Float16 { return num.Float16FromFloat32(f) }

// DType names an element type.
type DType = num.DType

// The element types.
const (
	TypeBFloat16 = num.BFloat16Type
	TypeFloat16  = num.Float16Type
	TypeFloat32  = num.Float32Type
	TypeFloat64  = num.Float64Type
	TypeInt8     = num.Int8Type
	TypeUint8    = num.Uint8Type
	TypeInt16    = num.Int16Type
	TypeUint16   = num.Uint16Type
	TypeInt32    = num.Int32Type
	TypeUint32   = num.Uint32Type
	TypeInt64    = num.Int64Type
	TypeUint64   = num.Uint64Type
)

// Float is the element types that reductions sum, each node of the tree
// rounding once in the type itself.
type Float interface {
	BFloat16 | Float16 | float32 | float64
}

// Element is the element types that gathers and broadcasts copy, byte for
// byte: any fixed-size number type, including named ones.
type Element interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// DTypeOf returns the element type of T. A named type of another
// underlying type (say a ~uint16 enum) is its underlying type, except
// BFloat16 and Float16, which are themselves.
func DTypeOf[T Element]() DType {
	var zero T
	switch any(zero).(type) {
	case BFloat16:
		return TypeBFloat16
	case Float16:
		return TypeFloat16
	}
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int8:
		return TypeInt8
	case reflect.Uint8:
		return TypeUint8
	case reflect.Int16:
		return TypeInt16
	case reflect.Uint16:
		return TypeUint16
	case reflect.Int32:
		return TypeInt32
	case reflect.Uint32:
		return TypeUint32
	case reflect.Int64:
		return TypeInt64
	case reflect.Uint64:
		return TypeUint64
	case reflect.Float32:
		return TypeFloat32
	case reflect.Float64:
		return TypeFloat64
	}
	panic("unreachable: Element admits no other kind")
}

// bytesOf views a typed slice as its bytes, keeping nil as nil so that
// validation can tell a missing buffer from an empty one.
func bytesOf[T Element](s []T) []byte {
	if s == nil {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// typedOf is bytesOf's inverse for memory the communicator owns (staging),
// which is page aligned.
func typedOf[T Element](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}
