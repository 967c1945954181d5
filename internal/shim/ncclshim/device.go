package ncclshim

import (
	"sync"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// DriverDevice is the Device of the library: the CUDA driver, in the
// calling thread's current context. The C boundary calls the shim on the
// application's threads, where that is the application's context (NCCL
// requires the communicator's device to be current).
type DriverDevice struct{}

// loadDriver loads the driver library once, for good: the first of the
// shim's calls that needs it loads it (detcoll's Open takes its own
// reference later).
var loadDriver = sync.OnceValue(driver.Load)

func (DriverDevice) Ready() error { return loadDriver() }

func (DriverDevice) Alloc(n int) (uintptr, error) {
	if err := loadDriver(); err != nil {
		return 0, err
	}
	p, err := driver.MemAlloc(n)
	return uintptr(p), err
}

func (DriverDevice) Free(p uintptr) { driver.MemFree(driver.DevicePtr(p)) }

func (DriverDevice) CopyIn(dst uintptr, src []byte) error {
	return driver.MemcpyHtoD(driver.DevicePtr(dst), src)
}

func (DriverDevice) CopyOut(dst []byte, src uintptr) error {
	return driver.MemcpyDtoH(dst, driver.DevicePtr(src))
}

func (DriverDevice) NewStream() (uintptr, error) {
	if err := loadDriver(); err != nil {
		return 0, err
	}
	s, err := driver.StreamCreate(driver.StreamNonBlocking)
	return uintptr(s), err
}

func (DriverDevice) DestroyStream(s uintptr) { driver.Stream(s).Destroy() }

func (d DriverDevice) Follow(ours, theirs uintptr) error {
	a, aCapturing, err := driver.Stream(ours).CaptureID()
	if err != nil {
		return err
	}
	b, bCapturing, err := driver.Stream(theirs).CaptureID()
	if err != nil {
		return err
	}
	if aCapturing != bCapturing || a != b {
		return nil
	}
	return d.Fork(ours, theirs)
}

func (DriverDevice) Fork(ours, theirs uintptr) error {
	e, err := driver.EventCreate(driver.EventDisableTiming)
	if err != nil {
		return err
	}
	defer e.Destroy() // a recorded event may be destroyed: the wait stands
	if err := e.Record(driver.Stream(theirs)); err != nil {
		return err
	}
	return driver.Stream(ours).WaitEvent(e)
}

func (DriverDevice) CopyAsync(dst, src uintptr, n int, s uintptr) error {
	return driver.MemcpyDtoDAsync(driver.DevicePtr(dst), driver.DevicePtr(src), n, driver.Stream(s))
}

func (DriverDevice) Done(s uintptr) (bool, error) { return driver.Stream(s).Query() }

func (DriverDevice) Capturing(s uintptr) (bool, error) {
	if err := loadDriver(); err != nil {
		return false, err
	}
	return driver.Stream(s).Capturing()
}

// KeepCurrentContext notes the calling thread's current CUDA context and
// returns the function that makes it current again, if something changed
// it (detcoll's setup makes its device's primary context current). Before
// the driver is loaded there is nothing to keep.
func KeepCurrentContext() (restore func()) {
	if !driverLoaded() {
		return func() {}
	}
	was, err := driver.CurrentContext()
	if err != nil {
		return func() {}
	}
	return func() {
		if now, err := driver.CurrentContext(); err == nil && now != was {
			was.SetCurrent()
		}
	}
}

// driverLoaded reports whether the driver library is loaded (by the shim
// or by detcoll's Open).
func driverLoaded() bool {
	cuda, _ := driver.Libraries()
	return cuda != ""
}
