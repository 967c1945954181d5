//go:build !cgo || !linux

package driver

import (
	"fmt"
	"time"
)

// This file gives builds without cgo, or off Linux, the same API as the cgo
// implementation. Every function fails with an error matching
// ErrUnavailable, so callers need no build tags of their own.

const dynamicLoading = false

var errNoCgo = fmt.Errorf("%w: this build has no cgo or is not for Linux", ErrUnavailable)

func stub(fn string) error { return fmt.Errorf("%s: %w", fn, errNoCgo) }

func driverErrorStrings(Result) (name, desc string, ok bool) { return "", "", false }
func nvrtcErrorString(NVRTCResult) (string, bool)            { return "", false }

// Load always fails: this build cannot load the CUDA driver.
func Load() error { return stub("Load") }

// Unload always fails: nothing can have been loaded.
func Unload() error { return stub("Unload") }

// Libraries returns empty names: nothing is loaded.
func Libraries() (cuda, nvrtc string) { return "", "" }

// DriverVersion always fails in this build.
func DriverVersion() (int, error) { return 0, stub("DriverVersion") }

// DeviceCount always fails in this build.
func DeviceCount() (int, error) { return 0, stub("DeviceCount") }

// DeviceGet always fails in this build.
func DeviceGet(ordinal int) (Device, error) { return 0, stub("DeviceGet") }

// Name always fails in this build.
func (d Device) Name() (string, error) { return "", stub("Device.Name") }

// Attribute always fails in this build.
func (d Device) Attribute(a DeviceAttribute) (int, error) { return 0, stub("Device.Attribute") }

// ComputeCapability always fails in this build.
func (d Device) ComputeCapability() (major, minor int, err error) {
	return 0, 0, stub("Device.ComputeCapability")
}

// Arch always fails in this build.
func (d Device) Arch() (string, error) { return "", stub("Device.Arch") }

// PCIBusID always fails in this build.
func (d Device) PCIBusID() (string, error) { return "", stub("Device.PCIBusID") }

// CanAccessPeer always fails in this build.
func (d Device) CanAccessPeer(peer Device) (bool, error) { return false, stub("Device.CanAccessPeer") }

// PrimaryCtxRetain always fails in this build.
func (d Device) PrimaryCtxRetain() (Context, error) { return 0, stub("Device.PrimaryCtxRetain") }

// PrimaryCtxRelease always fails in this build.
func (d Device) PrimaryCtxRelease() error { return stub("Device.PrimaryCtxRelease") }

// SetCurrent always fails in this build.
func (c Context) SetCurrent() error { return stub("Context.SetCurrent") }

// CurrentContext always fails in this build.
func CurrentContext() (Context, error) { return 0, stub("CurrentContext") }

// PushCurrent always fails in this build.
func (c Context) PushCurrent() error { return stub("Context.PushCurrent") }

// PopCurrent always fails in this build.
func PopCurrent() (Context, error) { return 0, stub("PopCurrent") }

// CtxSynchronize always fails in this build.
func CtxSynchronize() error { return stub("CtxSynchronize") }

// MemGetInfo always fails in this build.
func MemGetInfo() (free, total int, err error) { return 0, 0, stub("MemGetInfo") }

// MemAlloc always fails in this build.
func MemAlloc(size int) (DevicePtr, error) { return 0, stub("MemAlloc") }

// MemFree always fails in this build.
func MemFree(p DevicePtr) error { return stub("MemFree") }

// MemsetD8 always fails in this build.
func MemsetD8(p DevicePtr, v byte, n int) error { return stub("MemsetD8") }

// MemsetD32 always fails in this build.
func MemsetD32(p DevicePtr, v uint32, n int) error { return stub("MemsetD32") }

// MemsetD8Async always fails in this build.
func MemsetD8Async(p DevicePtr, v byte, n int, s Stream) error { return stub("MemsetD8Async") }

// MemcpyHtoD always fails in this build.
func MemcpyHtoD(dst DevicePtr, src []byte) error { return stub("MemcpyHtoD") }

// MemcpyDtoH always fails in this build.
func MemcpyDtoH(dst []byte, src DevicePtr) error { return stub("MemcpyDtoH") }

// MemcpyDtoD always fails in this build.
func MemcpyDtoD(dst, src DevicePtr, n int) error { return stub("MemcpyDtoD") }

// MemcpyHtoDAsync always fails in this build.
func MemcpyHtoDAsync(dst DevicePtr, src HostMem, s Stream) error { return stub("MemcpyHtoDAsync") }

// MemcpyDtoHAsync always fails in this build.
func MemcpyDtoHAsync(dst HostMem, src DevicePtr, s Stream) error { return stub("MemcpyDtoHAsync") }

// MemcpyDtoDAsync always fails in this build.
func MemcpyDtoDAsync(dst, src DevicePtr, n int, s Stream) error { return stub("MemcpyDtoDAsync") }

// PointerRange always fails in this build.
func PointerRange(p DevicePtr) (base DevicePtr, size int, err error) {
	return 0, 0, stub("PointerRange")
}

// MemHostAllocMapped always fails in this build.
func MemHostAllocMapped(size int) (HostMem, error) { return HostMem{}, stub("MemHostAllocMapped") }

// MemFreeHost always fails in this build.
func MemFreeHost(h HostMem) error { return stub("MemFreeHost") }

// MemHostGetDevicePointer always fails in this build.
func MemHostGetDevicePointer(h HostMem) (DevicePtr, error) {
	return 0, stub("MemHostGetDevicePointer")
}

// MemHostRegister always fails in this build.
func MemHostRegister(b []byte, flags HostRegisterFlags) (HostMem, error) {
	return HostMem{}, stub("MemHostRegister")
}

// MemHostUnregister always fails in this build.
func MemHostUnregister(h HostMem) error { return stub("MemHostUnregister") }

// IPCGetMemHandle always fails in this build.
func IPCGetMemHandle(p DevicePtr) (IPCMemHandle, error) {
	return IPCMemHandle{}, stub("IPCGetMemHandle")
}

// IPCOpenMemHandle always fails in this build.
func IPCOpenMemHandle(h IPCMemHandle) (DevicePtr, error) { return 0, stub("IPCOpenMemHandle") }

// IPCCloseMemHandle always fails in this build.
func IPCCloseMemHandle(p DevicePtr) error { return stub("IPCCloseMemHandle") }

// MemAllocationGranularity always fails in this build.
func MemAllocationGranularity(dev Device, types MemHandleType, which Granularity) (int, error) {
	return 0, stub("MemAllocationGranularity")
}

// MemCreate always fails in this build.
func MemCreate(size int, dev Device, types MemHandleType) (MemHandle, error) {
	return 0, stub("MemCreate")
}

// MemRelease always fails in this build.
func MemRelease(h MemHandle) error { return stub("MemRelease") }

// MemRetainAllocationHandle always fails in this build.
func MemRetainAllocationHandle(p DevicePtr) (MemHandle, error) {
	return 0, stub("MemRetainAllocationHandle")
}

// MemGetAddressRange always fails in this build.
func MemGetAddressRange(p DevicePtr) (base DevicePtr, size int, err error) {
	return 0, 0, stub("MemGetAddressRange")
}

// MemExportFD always fails in this build.
func MemExportFD(h MemHandle) (int, error) { return -1, stub("MemExportFD") }

// MemImportFD always fails in this build.
func MemImportFD(fd int) (MemHandle, error) { return 0, stub("MemImportFD") }

// MemAddressReserve always fails in this build.
func MemAddressReserve(size, align int) (DevicePtr, error) { return 0, stub("MemAddressReserve") }

// MemAddressFree always fails in this build.
func MemAddressFree(p DevicePtr, size int) error { return stub("MemAddressFree") }

// MemMap always fails in this build.
func MemMap(p DevicePtr, size int, h MemHandle) error { return stub("MemMap") }

// MemUnmap always fails in this build.
func MemUnmap(p DevicePtr, size int) error { return stub("MemUnmap") }

// MemSetAccess always fails in this build.
func MemSetAccess(p DevicePtr, size int, dev Device) error { return stub("MemSetAccess") }

// MemAllocShareable always fails in this build.
func MemAllocShareable(dev Device, size int) (DevicePtr, int, error) {
	return 0, 0, stub("MemAllocShareable")
}

// MemMapNew always fails in this build.
func MemMapNew(h MemHandle, size, align int, dev Device) (DevicePtr, error) {
	return 0, stub("MemMapNew")
}

// MemFreeShareable always fails in this build.
func MemFreeShareable(p DevicePtr) error { return stub("MemFreeShareable") }

// StreamCreate always fails in this build.
func StreamCreate(flags StreamFlags) (Stream, error) { return 0, stub("StreamCreate") }

// Destroy always fails in this build.
func (s Stream) Destroy() error { return stub("Stream.Destroy") }

// Synchronize always fails in this build.
func (s Stream) Synchronize() error { return stub("Stream.Synchronize") }

// Query always fails in this build.
func (s Stream) Query() (bool, error) { return false, stub("Stream.Query") }

// WaitEvent always fails in this build.
func (s Stream) WaitEvent(e Event) error { return stub("Stream.WaitEvent") }

// Capturing always fails in this build.
func (s Stream) Capturing() (bool, error) { return false, stub("Stream.Capturing") }

// CaptureID always fails in this build.
func (s Stream) CaptureID() (uint64, bool, error) { return 0, false, stub("Stream.CaptureID") }

// BeginCapture always fails in this build.
func (s Stream) BeginCapture(mode CaptureMode) error { return stub("Stream.BeginCapture") }

// EndCapture always fails in this build.
func (s Stream) EndCapture() (Graph, error) { return 0, stub("Stream.EndCapture") }

// ExchangeCaptureMode always fails in this build.
func ExchangeCaptureMode(mode CaptureMode) (CaptureMode, error) {
	return mode, stub("ExchangeCaptureMode")
}

// EventCreate always fails in this build.
func EventCreate(flags EventFlags) (Event, error) { return 0, stub("EventCreate") }

// Destroy always fails in this build.
func (e Event) Destroy() error { return stub("Event.Destroy") }

// Record always fails in this build.
func (e Event) Record(s Stream) error { return stub("Event.Record") }

// Synchronize always fails in this build.
func (e Event) Synchronize() error { return stub("Event.Synchronize") }

// Query always fails in this build.
func (e Event) Query() (bool, error) { return false, stub("Event.Query") }

// EventElapsed always fails in this build.
func EventElapsed(start, end Event) (time.Duration, error) { return 0, stub("EventElapsed") }

// ModuleLoadData always fails in this build.
func ModuleLoadData(image []byte) (Module, error) { return 0, stub("ModuleLoadData") }

// Unload always fails in this build.
func (m Module) Unload() error { return stub("Module.Unload") }

// Function always fails in this build.
func (m Module) Function(name string) (Function, error) { return 0, stub("Module.Function") }

// SetAttribute always fails in this build.
func (f Function) SetAttribute(a FuncAttribute, v int) error { return stub("Function.SetAttribute") }

// MaxActiveBlocksPerSM always fails in this build.
func (f Function) MaxActiveBlocksPerSM(block, shmem int) (int, error) {
	return 0, stub("Function.MaxActiveBlocksPerSM")
}

// Launch always fails in this build.
func (f Function) Launch(cfg LaunchConfig, args ...any) error { return stub("Function.Launch") }

// LaunchStruct always fails in this build.
func LaunchStruct[T any](f Function, cfg LaunchConfig, arg *T) error { return stub("LaunchStruct") }

// Instantiate always fails in this build.
func (g Graph) Instantiate() (GraphExec, error) { return 0, stub("Graph.Instantiate") }

// Destroy always fails in this build.
func (g Graph) Destroy() error { return stub("Graph.Destroy") }

// Launch always fails in this build.
func (x GraphExec) Launch(s Stream) error { return stub("GraphExec.Launch") }

// Destroy always fails in this build.
func (x GraphExec) Destroy() error { return stub("GraphExec.Destroy") }

// NVRTCVersion always fails in this build.
func NVRTCVersion() (major, minor int, err error) { return 0, 0, stub("NVRTCVersion") }

// Compile always fails in this build.
func Compile(src, name string, opts []string) ([]byte, error) { return nil, stub("Compile") }
