package cpu_test

import (
	"context"
	"errors"
	"testing"

	"github.com/detcoll/detcoll"
)

// TestDeviceCallsOnCPU: a cpu communicator refuses device calls with
// ErrInvalid, before anything else, and says it has no device.
func TestDeviceCallsOnCPU(t *testing.T) {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if d := c.Device(); d != -1 {
		t.Errorf("Device() = %d on a cpu communicator, want -1", d)
	}
	const p = detcoll.DevicePtr(1 << 20)
	calls := map[string]func() error{
		"AllReduceDevice":     func() error { return c.AllReduceDevice(p, p, 4, detcoll.TypeFloat32, 0) },
		"ReduceScatterDevice": func() error { return c.ReduceScatterDevice(p, p+64, 4, detcoll.TypeFloat32, 0) },
		"AllGatherDevice":     func() error { return c.AllGatherDevice(p, p, 4, detcoll.TypeUint8, 0) },
		"BroadcastDevice":     func() error { return c.BroadcastDevice(p, 4, detcoll.TypeUint8, 0, 0) },
		"AllGatherManyDevice": func() error {
			return c.AllGatherManyDevice([]detcoll.DevicePtr{p}, []detcoll.DevicePtr{p}, []int{4}, detcoll.TypeUint8, 0)
		},
		"ReduceScatterManyDevice": func() error {
			return c.ReduceScatterManyDevice([]detcoll.DevicePtr{p}, []detcoll.DevicePtr{p + 64}, []int{4}, detcoll.TypeFloat32, 0)
		},
		"StageDevice": func() error { _, err := c.StageDevice(4, detcoll.TypeFloat32, 0); return err },
		"AllReduceStagedDevice": func() error {
			return c.AllReduceStagedDevice(p, 4, detcoll.TypeFloat32, 0)
		},
		"Synchronize": func() error { return c.Synchronize(0) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, detcoll.ErrInvalid) {
			t.Errorf("%s on a cpu communicator: got %v, want ErrInvalid", name, err)
		}
	}
	c.Close(ctx)
	if err := c.AllReduceDevice(p, p, 4, detcoll.TypeFloat32, 0); !errors.Is(err, detcoll.ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
}
