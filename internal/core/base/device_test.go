package base

import (
	"errors"
	"testing"

	"github.com/detcoll/detcoll/internal/core/num"
)

// TestValidateDevice checks that device requests follow the host rules
// (the same code) plus element alignment for reductions.
func TestValidateDevice(t *testing.T) {
	const w, rank, capacity = 2, 1, 1 << 20
	b := func(addr uint64, n int) []DeviceBuf { return []DeviceBuf{{Addr: addr, Len: n}} }
	f32 := num.Float32Type
	good := []DeviceRequest{
		{Op: OpAllReduce, DType: f32, In: b(4096, 400), Out: b(8192, 400)},
		{Op: OpAllReduce, DType: f32, In: b(4096, 400), Out: b(4096, 400)},
		{Op: OpAllReduce, DType: f32, In: b(0, 0), Out: b(0, 0)},
		{Op: OpReduceScatter, DType: f32, In: b(4096, 800), Out: b(8192, 400)},
		{Op: OpAllGather, DType: num.Uint8Type, In: b(4097, 3), Out: b(8195, 6)},
		{Op: OpAllGather, DType: num.Uint8Type, In: b(4096+3, 3), Out: b(4096, 6)}, // in place: rank 1's slot
		{Op: OpBroadcast, DType: num.Int64Type, Root: 1, In: b(4096, 8), Out: b(4096, 8)},
		{Op: OpAllReduceStaged, DType: f32, Out: b(4096, 8)},
		{Op: OpBarrier},
		{Op: OpAllReduce, DType: f32, Red: num.PreMulSum, ScalarAt: 256, In: b(4096, 400), Out: b(8192, 400)},
	}
	for i, r := range good {
		if err := (Bounds{Rank: rank, World: w, Capacity: capacity}).ValidateDevice(&r); err != nil {
			t.Errorf("good request %d (%v): %v", i, r.Op, err)
		}
	}
	bad := []struct {
		name string
		r    DeviceRequest
	}{
		{"nil input", DeviceRequest{Op: OpAllReduce, DType: f32, In: b(0, 400), Out: b(8192, 400)}},
		{"nil output", DeviceRequest{Op: OpAllReduce, DType: f32, In: b(4096, 400), Out: b(0, 400)}},
		{"partial overlap", DeviceRequest{Op: OpAllReduce, DType: f32, In: b(4096, 400), Out: b(4100, 400)}},
		{"misaligned float32", DeviceRequest{Op: OpAllReduce, DType: f32, In: b(4097, 400), Out: b(8192, 400)}},
		{"premulsum of integers", DeviceRequest{Op: OpAllReduce, DType: num.Int32Type, Red: num.PreMulSum, Scalar: make([]byte, 4), In: b(4096, 400), Out: b(8192, 400)}},
		{"premulsum without a scalar", DeviceRequest{Op: OpAllReduce, DType: f32, Red: num.PreMulSum, In: b(4096, 400), Out: b(8192, 400)}},
		{"a scalar for max", DeviceRequest{Op: OpAllReduce, DType: f32, Red: num.Max, Scalar: make([]byte, 4), In: b(4096, 400), Out: b(8192, 400)}},
		{"an operator for a gather", DeviceRequest{Op: OpAllGather, DType: f32, Red: num.Max, In: b(4096, 400), Out: b(8192, 800)}},
		{"unknown operator", DeviceRequest{Op: OpAllReduce, DType: f32, Red: 99, In: b(4096, 400), Out: b(8192, 400)}},
		{"over capacity", DeviceRequest{Op: OpAllReduce, DType: f32, In: b(1<<30, capacity+4), Out: b(1<<31, capacity+4)}},
		{"reduce-scatter overlap", DeviceRequest{Op: OpReduceScatter, DType: f32, In: b(4096, 800), Out: b(4096, 400)}},
		{"reduce-scatter shape", DeviceRequest{Op: OpReduceScatter, DType: f32, In: b(4096, 804), Out: b(8192, 400)}},
		{"gather into another slot", DeviceRequest{Op: OpAllGather, DType: num.Uint8Type, In: b(4096, 3), Out: b(4096, 6)}},
		{"broadcast root", DeviceRequest{Op: OpBroadcast, DType: f32, Root: 2, In: b(4096, 8), Out: b(4096, 8)}},
		{"broadcast two buffers", DeviceRequest{Op: OpBroadcast, DType: f32, In: b(4096, 8), Out: b(8192, 8)}},
		{"unknown type", DeviceRequest{Op: OpAllGather, In: b(4096, 8), Out: b(8192, 16)}},
		{"many without buffers", DeviceRequest{Op: OpAllGatherMany, DType: f32}},
		{"device scalar of no type", DeviceRequest{Op: OpAllReduce, Red: num.PreMulSum, ScalarAt: 256, In: b(4096, 400), Out: b(8192, 400)}},
		{"device scalar misaligned", DeviceRequest{Op: OpAllReduce, DType: f32, Red: num.PreMulSum, ScalarAt: 258, In: b(4096, 400), Out: b(8192, 400)}},
		{"device scalar and host scalar", DeviceRequest{Op: OpAllReduce, DType: f32, Red: num.PreMulSum, ScalarAt: 256, Scalar: make([]byte, 4), In: b(4096, 400), Out: b(8192, 400)}},
		{"device scalar for max", DeviceRequest{Op: OpAllReduce, DType: f32, Red: num.Max, ScalarAt: 256, In: b(4096, 400), Out: b(8192, 400)}},
	}
	for _, tc := range bad {
		if err := (Bounds{Rank: rank, World: w, Capacity: capacity}).ValidateDevice(&tc.r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", tc.name, err)
		}
	}
}

// TestDeviceSignatureMatchesHost: a device call and the host call of the
// same shape publish the same signature, so the backends' checks agree.
func TestDeviceSignatureMatchesHost(t *testing.T) {
	host := &Request{Op: OpReduceScatterMany, DType: num.Float16Type,
		In: [][]byte{make([]byte, 8), make([]byte, 20)}, Out: [][]byte{make([]byte, 4), make([]byte, 10)}}
	dev := &DeviceRequest{Op: OpReduceScatterMany, DType: num.Float16Type,
		In:  []DeviceBuf{{Addr: 4096, Len: 8}, {Addr: 8192, Len: 20}},
		Out: []DeviceBuf{{Addr: 16384, Len: 4}, {Addr: 32768, Len: 10}}}
	if h, d := host.Signature(), dev.Signature(); h != d {
		t.Errorf("host %v, device %v", h, d)
	}
}
