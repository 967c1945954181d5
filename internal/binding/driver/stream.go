//go:build cgo && linux

package driver

/*
#include "cudrv.h"
*/
import "C"

// StreamCreate creates a stream in the current context. detcoll uses
// StreamNonBlocking streams, so that its work never waits on (or stalls) a
// user's legacy default stream.
func StreamCreate(flags StreamFlags) (Stream, error) {
	var s C.CUstream
	if r := C.dc_cuStreamCreate(&s, C.uint(flags)); r != 0 {
		return 0, cuErr(r, "cuStreamCreate", uint32(flags))
	}
	return Stream(s), nil
}

// Destroy destroys the stream. Work already queued still runs to completion.
func (s Stream) Destroy() error {
	if r := C.dc_cuStreamDestroy(C.CUstream(s)); r != 0 {
		return cuErr(r, "cuStreamDestroy_v2", uintptr(s))
	}
	return nil
}

// Synchronize waits until all work queued on s is done, and returns the
// error of an earlier asynchronous failure, if any.
func (s Stream) Synchronize() error {
	if r := C.dc_cuStreamSynchronize(C.CUstream(s)); r != 0 {
		return cuErr(r, "cuStreamSynchronize", uintptr(s))
	}
	return nil
}

// Query reports whether all work queued on s is done, without waiting.
func (s Stream) Query() (bool, error) {
	r := C.dc_cuStreamQuery(C.CUstream(s))
	switch Result(r) {
	case ResultSuccess:
		return true, nil
	case ResultNotReady:
		return false, nil
	}
	return false, cuErr(r, "cuStreamQuery", uintptr(s))
}

// Capturing reports whether s is capturing a graph now (cuStreamIsCapturing:
// an invalidated capture counts as capturing; the work queued on it is
// then not run, so a caller waiting for it must not).
func (s Stream) Capturing() (bool, error) {
	var st C.int
	if r := C.dc_cuStreamIsCapturing(C.CUstream(s), &st); r != 0 {
		return false, cuErr(r, "cuStreamIsCapturing", uintptr(s))
	}
	return st != 0, nil
}

// CaptureID reports whether s is capturing a graph now and, if so, the
// capture's unique id (cuStreamGetCaptureInfo): two streams capturing
// with the same id are in one capture, where one may wait for the other.
func (s Stream) CaptureID() (id uint64, capturing bool, err error) {
	var st C.int
	var cid C.ulonglong
	if r := C.dc_cuStreamGetCaptureInfo(C.CUstream(s), &st, &cid, nil, nil, nil, nil); r != 0 {
		return 0, false, cuErr(r, "cuStreamGetCaptureInfo", uintptr(s))
	}
	if st == 0 {
		return 0, false, nil
	}
	return uint64(cid), true, nil
}

// WaitEvent makes work queued on s after this call wait until e completes.
// It does not block the host.
func (s Stream) WaitEvent(e Event) error {
	if r := C.dc_cuStreamWaitEvent(C.CUstream(s), C.CUevent(e), 0); r != 0 {
		return cuErr(r, "cuStreamWaitEvent", uintptr(s), uintptr(e))
	}
	return nil
}

// BeginCapture starts recording the work queued on s into a graph instead of
// running it. The legacy default stream cannot be captured.
func (s Stream) BeginCapture(mode CaptureMode) error {
	if r := C.dc_cuStreamBeginCapture(C.CUstream(s), C.int(mode)); r != 0 {
		return cuErr(r, "cuStreamBeginCapture_v2", uintptr(s), int(mode))
	}
	return nil
}

// EndCapture ends the capture begun by BeginCapture and returns the graph,
// which the caller instantiates and eventually destroys.
func (s Stream) EndCapture() (Graph, error) {
	var g C.CUgraph
	if r := C.dc_cuStreamEndCapture(C.CUstream(s), &g); r != 0 {
		return 0, cuErr(r, "cuStreamEndCapture", uintptr(s))
	}
	return Graph(g), nil
}

// ExchangeCaptureMode sets the calling thread's stream capture interaction
// mode (which of its calls another thread's capture forbids) to mode and
// returns the mode it had (cuThreadExchangeStreamCaptureMode). The mode is
// per OS thread: the caller holds its thread locked and restores it.
func ExchangeCaptureMode(mode CaptureMode) (CaptureMode, error) {
	m := C.int(mode)
	if r := C.dc_cuThreadExchangeStreamCaptureMode(&m); r != 0 {
		return mode, cuErr(r, "cuThreadExchangeStreamCaptureMode", int(mode))
	}
	return CaptureMode(m), nil
}
