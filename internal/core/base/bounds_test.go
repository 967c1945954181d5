package base

import (
	"errors"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/detcoll/detcoll/internal/core/num"
)

// TestValidateStage: Stage and StageDevice share one capacity rule, the
// one every staged all-reduce is held to (Validate).
func TestValidateStage(t *testing.T) {
	b := Bounds{Rank: 0, World: 2, Capacity: 1000} // staging capacity: 1024
	for _, tc := range []struct {
		n    int
		dt   num.DType
		want string // "" for no error
	}{
		{256, num.Float32Type, ""},
		{512, num.BFloat16Type, ""},
		{257, num.Float32Type, "do not fit the capacity of 1000 bytes"},
		{-1, num.Float32Type, "do not fit"},
		{math.MaxInt, num.Float64Type, "do not fit"},
		{4, num.Int32Type, ""}, // integers sum, max and min
		{4, num.Invalid, "cannot be reduced"},
	} {
		for _, device := range []bool{false, true} {
			err := b.ValidateStage(tc.n, tc.dt, device)
			if tc.want == "" {
				if err != nil {
					t.Errorf("ValidateStage(%d %v, device=%v) = %v; want nil", tc.n, tc.dt, device, err)
				}
				// What Stage accepts, the staged all-reduce accepts too.
				req := &Request{Op: OpAllReduceStaged, DType: tc.dt, Out: [][]byte{make([]byte, tc.n*tc.dt.Size())}}
				if err := b.Validate(req); err != nil {
					t.Errorf("Stage of %d %v passes, its AllReduceStaged does not: %v", tc.n, tc.dt, err)
				}
				continue
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ValidateStage(%d %v, device=%v) = %v; want ErrInvalid with %q", tc.n, tc.dt, device, err, tc.want)
			}
		}
	}
}

// TestStagedCall: Stage, then exactly one AllReduceStaged of the staged
// size; nothing else in between.
func TestStagedCall(t *testing.T) {
	var s StagedCall
	if err := s.Check(OpAllReduceStaged, 8, false); err == nil || !strings.Contains(err.Error(), "call Stage first") {
		t.Errorf("AllReduceStaged with nothing staged = %v", err)
	}
	if err := s.Check(OpAllReduce, 8, false); err != nil {
		t.Errorf("AllReduce with nothing staged = %v", err)
	}
	s.Begin(16)
	if err := s.Check(OpAllGather, 8, true); err == nil || !strings.Contains(err.Error(), "call AllReduceStagedDevice first") {
		t.Errorf("AllGather while staged = %v", err)
	}
	if err := s.Check(OpAllReduceStaged, 8, false); err == nil || !strings.Contains(err.Error(), "output has 8 bytes but 16 were staged") {
		t.Errorf("AllReduceStaged of another size = %v", err)
	}
	if !s.Pending() {
		t.Fatal("a refused AllReduceStaged ended the Stage")
	}
	if err := s.Check(OpAllReduceStaged, 16, false); err != nil || s.Pending() {
		t.Errorf("AllReduceStaged of the staged size = %v, pending %v; want nil, false", err, s.Pending())
	}
}

// TestValidateReserved: no buffer of a call may lie in the backend's own
// memory (a Stage view kept too long, say).
func TestValidateReserved(t *testing.T) {
	mem := make([]byte, 4096)
	b := Bounds{Rank: 0, World: 1, Capacity: 1 << 20,
		Reserved: Region{Addr: uint64(uintptr(unsafe.Pointer(&mem[0]))), Len: len(mem)}}
	outside := make([]byte, 64)
	for _, tc := range []struct {
		name    string
		in, out []byte
		ok      bool
	}{
		{"outside", outside, outside, true},
		{"input inside", mem[64:128], outside, false},
		{"output inside", outside, mem[4032:], false},
	} {
		err := b.Validate(&Request{Op: OpAllReduce, DType: num.Float32Type, In: [][]byte{tc.in}, Out: [][]byte{tc.out}})
		if tc.ok != (err == nil) || !tc.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v", tc.name, err)
		}
	}
}
