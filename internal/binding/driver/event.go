//go:build cgo && linux

package driver

/*
#include "cudrv.h"
*/
import "C"

import "time"

// EventCreate creates an event in the current context.
func EventCreate(flags EventFlags) (Event, error) {
	var e C.CUevent
	if r := C.dc_cuEventCreate(&e, C.uint(flags)); r != 0 {
		return 0, cuErr(r, "cuEventCreate", uint32(flags))
	}
	return Event(e), nil
}

// Destroy destroys the event; a pending record still completes.
func (e Event) Destroy() error {
	if r := C.dc_cuEventDestroy(C.CUevent(e)); r != 0 {
		return cuErr(r, "cuEventDestroy_v2", uintptr(e))
	}
	return nil
}

// Record queues the event on s: it completes when the work queued on s
// before it is done.
func (e Event) Record(s Stream) error {
	if r := C.dc_cuEventRecord(C.CUevent(e), C.CUstream(s)); r != 0 {
		return cuErr(r, "cuEventRecord", uintptr(e), uintptr(s))
	}
	return nil
}

// Synchronize waits until the event completes.
func (e Event) Synchronize() error {
	if r := C.dc_cuEventSynchronize(C.CUevent(e)); r != 0 {
		return cuErr(r, "cuEventSynchronize", uintptr(e))
	}
	return nil
}

// Query reports whether the event has completed, without waiting.
func (e Event) Query() (bool, error) {
	r := C.dc_cuEventQuery(C.CUevent(e))
	switch Result(r) {
	case ResultSuccess:
		return true, nil
	case ResultNotReady:
		return false, nil
	}
	return false, cuErr(r, "cuEventQuery", uintptr(e))
}

// EventElapsed returns the device time between two completed events, both
// created with timing (resolution about 0.5 µs). It calls
// cuEventElapsedTime_v2 where the driver has it (CUDA 12.8 and later), else
// cuEventElapsedTime.
func EventElapsed(start, end Event) (time.Duration, error) {
	var ms C.float
	if r := C.dc_cuEventElapsedTime(&ms, C.CUevent(start), C.CUevent(end)); r != 0 {
		return 0, cuErr(r, "cuEventElapsedTime", uintptr(start), uintptr(end))
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}
