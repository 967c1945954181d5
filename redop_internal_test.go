package detcoll

import (
	"errors"
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
)

// TestPreMulSumDeviceRefused: a device factor at address 0, or one given
// to a host call, is refused with ErrInvalid, never taken as a factor of 0.
func TestPreMulSumDeviceRefused(t *testing.T) {
	req := &base.DeviceRequest{Op: base.OpAllReduce, DType: TypeFloat32}
	if err := deviceRed(req, []RedOp{PreMulSumDevice(0)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("PreMulSumDevice(0) on a device call: %v; want ErrInvalid", err)
	}
	if err := deviceRed(req, []RedOp{PreMulSumDevice(256)}); err != nil || req.ScalarAt != 256 || len(req.Scalar) != 0 {
		t.Errorf("PreMulSumDevice(256): %v, ScalarAt %#x, Scalar %v; want the address alone", err, req.ScalarAt, req.Scalar)
	}
	for _, p := range []DevicePtr{0, 256} {
		if _, _, err := redOf([]RedOp{PreMulSumDevice(p)}, TypeFloat32, new([8]byte)); !errors.Is(err, ErrInvalid) {
			t.Errorf("PreMulSumDevice(%#x) on a host call: %v; want ErrInvalid", p, err)
		}
	}
}
