package driver

import (
	"fmt"
	"reflect"
	"unsafe"
)

// maxArgs matches DC_MAX_ARGS in cudrv.h.
const maxArgs = 256

// packedArgs is a kernel's arguments copied into one buffer: argument i is
// the bytes at offs[i]. The buffer holds no Go pointers, so it may be passed
// to C for the duration of a launch; cuLaunchKernel copies the values before
// it returns, so C keeps nothing.
type packedArgs struct {
	buf  []uint64 // uint64 words so that every offset up to 8-byte alignment is aligned
	offs []uint32
}

// ptr returns the start of the buffer, or nil when there are no arguments.
func (p *packedArgs) ptr() unsafe.Pointer {
	if len(p.buf) == 0 {
		return nil
	}
	return unsafe.Pointer(&p.buf[0])
}

// packArgs copies each argument's value into one buffer. Each argument must
// be a non-nil pointer to a fixed-size value that holds no Go pointers:
// *DevicePtr, *int32, *uint64, *float32, or an array or struct of such. Go's
// int and uint are refused because their width rarely matches the kernel's C
// int; use int32 or int64.
func packArgs(args []any) (packedArgs, error) {
	if len(args) > maxArgs {
		return packedArgs{}, fmt.Errorf("detcoll/cuda: %d kernel arguments, at most %d", len(args), maxArgs)
	}
	type span struct {
		src       unsafe.Pointer
		off, size uintptr
	}
	spans := make([]span, len(args))
	var end uintptr
	for i, a := range args {
		v := reflect.ValueOf(a)
		if v.Kind() != reflect.Pointer || v.IsNil() {
			return packedArgs{}, fmt.Errorf("detcoll/cuda: kernel argument %d is %T, want a non-nil pointer to its value", i, a)
		}
		t := v.Type().Elem()
		if err := plainType(t); err != nil {
			return packedArgs{}, fmt.Errorf("detcoll/cuda: kernel argument %d (%T): %v", i, a, err)
		}
		if t.Size() == 0 {
			return packedArgs{}, fmt.Errorf("detcoll/cuda: kernel argument %d (%T) has size 0", i, a)
		}
		align := uintptr(t.Align())
		end = (end + align - 1) &^ (align - 1)
		spans[i] = span{src: v.UnsafePointer(), off: end, size: t.Size()}
		end += t.Size()
	}
	p := packedArgs{buf: make([]uint64, (end+7)/8), offs: make([]uint32, len(args))}
	if end > 0 {
		dst := unsafe.Slice((*byte)(unsafe.Pointer(&p.buf[0])), end)
		for i, s := range spans {
			copy(dst[s.off:s.off+s.size], unsafe.Slice((*byte)(s.src), s.size))
			p.offs[i] = uint32(s.off)
		}
	}
	return p, nil
}

// plainType reports whether values of t are fixed-size, pointer-free data
// with an unambiguous width.
func plainType(t reflect.Type) error {
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return nil
	case reflect.Int, reflect.Uint:
		return fmt.Errorf("%v has a platform-dependent width; use int32 or int64", t)
	case reflect.Array:
		return plainType(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if err := plainType(t.Field(i).Type); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%v is not plain data (no pointers, slices, strings, maps, interfaces)", t)
}
