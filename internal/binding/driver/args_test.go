package driver

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"unsafe"
)

func TestPackArgs(t *testing.T) {
	type pair struct {
		A int32
		B float32
	}
	p := DevicePtr(0x1122334455667788)
	n := int32(-5)
	f := float32(1.5)
	b := byte(7)
	u := uint64(0xdeadbeefcafef00d)
	s := pair{3, 2.5}
	arr := [3]uint16{1, 2, 3}
	got, err := packArgs([]any{&p, &n, &f, &b, &u, &s, &arr})
	if err != nil {
		t.Fatal(err)
	}
	// Offsets follow Go (and C) alignment: 8, 4, 4, 1 -> pad to 8, 8, 4, 2.
	wantOffs := []uint32{0, 8, 12, 16, 24, 32, 40}
	if len(got.offs) != len(wantOffs) {
		t.Fatalf("offs = %v; want %v", got.offs, wantOffs)
	}
	for i := range wantOffs {
		if got.offs[i] != wantOffs[i] {
			t.Fatalf("offs = %v; want %v", got.offs, wantOffs)
		}
	}
	buf := unsafe.Slice((*byte)(got.ptr()), len(got.buf)*8)
	le := binary.LittleEndian // every platform this package loads CUDA on
	if v := le.Uint64(buf[0:]); v != uint64(p) {
		t.Errorf("arg 0 = %#x; want %#x", v, uint64(p))
	}
	if v := int32(le.Uint32(buf[8:])); v != n {
		t.Errorf("arg 1 = %d; want %d", v, n)
	}
	if v := math.Float32frombits(le.Uint32(buf[12:])); v != f {
		t.Errorf("arg 2 = %v; want %v", v, f)
	}
	if buf[16] != b {
		t.Errorf("arg 3 = %d; want %d", buf[16], b)
	}
	if v := le.Uint64(buf[24:]); v != u {
		t.Errorf("arg 4 = %#x; want %#x", v, u)
	}
	if a, bb := int32(le.Uint32(buf[32:])), math.Float32frombits(le.Uint32(buf[36:])); a != 3 || bb != 2.5 {
		t.Errorf("arg 5 = {%d %v}; want {3 2.5}", a, bb)
	}
	if a0, a2 := le.Uint16(buf[40:]), le.Uint16(buf[44:]); a0 != 1 || a2 != 3 {
		t.Errorf("arg 6 = [%d _ %d]; want [1 _ 3]", a0, a2)
	}
	// The buffer is a copy: later changes do not reach it.
	n = 99
	if v := int32(le.Uint32(buf[8:])); v != -5 {
		t.Errorf("arg 1 changed to %d after packing", v)
	}
}

func TestPackArgsEmpty(t *testing.T) {
	got, err := packArgs(nil)
	if err != nil || got.ptr() != nil || len(got.offs) != 0 {
		t.Errorf("packArgs(nil) = %+v, %v; want empty, nil", got, err)
	}
}

func TestPackArgsRejects(t *testing.T) {
	var nilPtr *int32
	i := 3
	ptr := new(int32)
	str := "x"
	type withPtr struct{ P *int32 }
	type empty struct{}
	for _, tc := range []struct {
		name string
		arg  any
		want string
	}{
		{"value", int32(1), "want a non-nil pointer"},
		{"nil pointer", nilPtr, "want a non-nil pointer"},
		{"nil", nil, "want a non-nil pointer"},
		{"int", &i, "platform-dependent width"},
		{"pointer to pointer", &ptr, "not plain data"},
		{"string", &str, "not plain data"},
		{"struct with pointer", &withPtr{}, "not plain data"},
		{"zero size", &empty{}, "size 0"},
	} {
		_, err := packArgs([]any{tc.arg})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: packArgs = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
	many := make([]any, maxArgs+1)
	for i := range many {
		many[i] = new(int32)
	}
	if _, err := packArgs(many); err == nil {
		t.Errorf("packArgs(%d args) succeeded; want an error", len(many))
	}
}

// TestLaunchStructRefusesPointers: LaunchStruct checks its type before it
// reaches the driver.
func TestLaunchStructRefusesPointers(t *testing.T) {
	type withPointer struct {
		N int64
		P *int64
	}
	err := LaunchStruct(0, LaunchConfig{}, &withPointer{})
	if err == nil || !strings.Contains(err.Error(), "LaunchStruct") {
		t.Errorf("LaunchStruct of a struct holding a pointer: %v", err)
	}
}
