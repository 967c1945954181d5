package devmem

import (
	"runtime"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// GPU is a device whose primary context is current on the thread of the
// goroutine that opened it, which stays locked to that thread until Close:
// driver calls (copies, allocations, streams) then need no context of
// their own. A GPU is used from that goroutine only.
type GPU struct {
	Device driver.Device
	Ctx    driver.Context
}

// Open locks the calling goroutine to its thread, loads the driver and
// makes the primary context of device ordinal current there. On error it
// undoes what it did.
func Open(ordinal int) (g *GPU, err error) {
	runtime.LockOSThread()
	if err := driver.Load(); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer func() {
		if err != nil {
			driver.Unload()
			runtime.UnlockOSThread()
		}
	}()
	g = &GPU{}
	if g.Device, err = driver.DeviceGet(ordinal); err != nil {
		return nil, err
	}
	if g.Ctx, err = g.Device.PrimaryCtxRetain(); err != nil {
		return nil, err
	}
	if err := g.Ctx.SetCurrent(); err != nil {
		g.Device.PrimaryCtxRelease()
		return nil, err
	}
	return g, nil
}

// Close releases the context and the driver and unlocks the thread. Free
// every Arena first.
func (g *GPU) Close() {
	g.Device.PrimaryCtxRelease()
	driver.Unload()
	runtime.UnlockOSThread()
}

// Count returns the number of GPUs here; without a driver, its error.
func Count() (int, error) {
	if err := driver.Load(); err != nil {
		return 0, err
	}
	defer driver.Unload()
	return driver.DeviceCount()
}

// FreeBytes returns the free memory of device ordinal, read in its primary
// context, which it retains for the purpose and makes current on the
// calling thread only meanwhile (pushed, then popped): the figure is taken
// alike before a communicator opens the device and after it closed, and
// the thread's current context is left as it was.
func FreeBytes(ordinal int) (int64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := driver.Load(); err != nil {
		return 0, err
	}
	defer driver.Unload()
	dev, err := driver.DeviceGet(ordinal)
	if err != nil {
		return 0, err
	}
	ctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		return 0, err
	}
	defer dev.PrimaryCtxRelease()
	if err := ctx.PushCurrent(); err != nil {
		return 0, err
	}
	defer driver.PopCurrent()
	free, _, err := driver.MemGetInfo()
	return int64(free), err
}
