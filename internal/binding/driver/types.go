package driver

import (
	"fmt"
	"unsafe"
)

// Handles. Each is the driver's opaque handle held as an integer; the zero
// value is the null handle (for Stream: the legacy default stream). Handles
// are plain values: copying one does not duplicate the object, and using one
// after its Destroy, Unload or Release is undefined, as in CUDA.
type (
	Device    int     // CUdevice: a device ordinal as the driver numbers it
	Context   uintptr // CUcontext
	Stream    uintptr // CUstream
	Event     uintptr // CUevent
	Module    uintptr // CUmodule
	Function  uintptr // CUfunction
	Graph     uintptr // CUgraph
	GraphExec uintptr // CUgraphExec
)

// DevicePtr is a device address (CUdeviceptr). Offsets into an allocation
// are plain additions: p + DevicePtr(off).
type DevicePtr uint64

// String formats the address in hex, as error messages show it.
func (p DevicePtr) String() string { return fmt.Sprintf("%#x", uint64(p)) }

// IPCMemHandle is the 64-byte CUipcMemHandle another process passes to
// IPCOpenMemHandle. It holds no pointers and may be sent over any channel.
type IPCMemHandle [64]byte

// HostMem is page-locked host memory that Go does not manage: allocated by
// MemHostAllocMapped or registered by MemHostRegister. Because the garbage
// collector neither moves nor frees it, asynchronous copies and kernels may
// use it after the call that handed it to CUDA returns, which Go memory must
// never be used for (cgo pointer rules).
type HostMem struct {
	ptr unsafe.Pointer // start; nil for the zero HostMem
	n   int            // length in bytes
}

// Ptr returns the start of the memory. Use it for atomic access to words the
// GPU reads or writes, such as (*atomic.Uint32)(h.Ptr()).
func (h HostMem) Ptr() unsafe.Pointer { return h.ptr }

// Len returns the length in bytes.
func (h HostMem) Len() int { return h.n }

// Bytes returns the memory as a slice. It stays valid until the memory is
// freed or unregistered.
func (h HostMem) Bytes() []byte {
	if h.ptr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(h.ptr), h.n)
}

// Slice returns bytes [off, off+n) of h, for copying part of it. Like a slice
// expression it panics if the range is out of bounds. The result shares h's
// lifetime: free or unregister h itself, never a slice of it.
func (h HostMem) Slice(off, n int) HostMem {
	if off < 0 || n < 0 || off > h.n-n {
		panic(fmt.Sprintf("detcoll/cuda: HostMem.Slice(%d, %d) out of range [0:%d]", off, n, h.n))
	}
	return HostMem{ptr: unsafe.Add(h.ptr, off), n: n}
}

// Dim3 is a grid or block shape. A zero component counts as 1, so
// Dim3{X: 256} is a one-dimensional block of 256 threads.
type Dim3 struct{ X, Y, Z uint32 }

func (d Dim3) dims() (x, y, z uint32) { return one(d.X), one(d.Y), one(d.Z) }

func one(v uint32) uint32 {
	if v == 0 {
		return 1
	}
	return v
}

// LaunchConfig says how Launch runs a kernel.
type LaunchConfig struct {
	Grid, Block Dim3
	SharedMem   int    // dynamic shared memory bytes per block
	Stream      Stream // zero: the legacy default stream
}

// StreamFlags are cuStreamCreate flags.
type StreamFlags uint32

// Stream flags.
const (
	StreamDefault     StreamFlags = 0x0 // synchronizes with the legacy default stream
	StreamNonBlocking StreamFlags = 0x1 // does not synchronize with the legacy default stream
)

// EventFlags are cuEventCreate flags.
type EventFlags uint32

// Event flags.
const (
	EventDefault       EventFlags = 0x0 // records timing; Synchronize spins
	EventBlockingSync  EventFlags = 0x1 // Synchronize blocks the thread instead of spinning
	EventDisableTiming EventFlags = 0x2 // no timing: cheaper to record and wait on
)

// HostRegisterFlags are cuMemHostRegister flags.
type HostRegisterFlags uint32

// Host register flags.
const (
	HostRegisterPortable  HostRegisterFlags = 0x1 // pinned for every context, not only the current one
	HostRegisterDeviceMap HostRegisterFlags = 0x2 // mapped into the device address space
	HostRegisterIOMemory  HostRegisterFlags = 0x4 // the range is I/O memory (such as a PCIe BAR)
	HostRegisterReadOnly  HostRegisterFlags = 0x8 // the device only reads it
)

// CaptureMode is a CUstreamCaptureMode: which other threads' unsafe calls
// (such as MemAlloc) a stream capture forbids while it runs.
type CaptureMode int

// Capture modes.
const (
	CaptureModeGlobal      CaptureMode = 0 // forbids unsafe calls in every thread
	CaptureModeThreadLocal CaptureMode = 1 // forbids them only in the capturing thread
	CaptureModeRelaxed     CaptureMode = 2 // forbids nothing
)

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int

// Device attributes detcoll reads. Any other CUdevice_attribute value may be
// passed to Device.Attribute too.
const (
	AttrMaxThreadsPerBlock           DeviceAttribute = 1
	AttrWarpSize                     DeviceAttribute = 10
	AttrMultiprocessorCount          DeviceAttribute = 16
	AttrCanMapHostMemory             DeviceAttribute = 19
	AttrPCIBusID                     DeviceAttribute = 33
	AttrPCIDeviceID                  DeviceAttribute = 34
	AttrUnifiedAddressing            DeviceAttribute = 41
	AttrPCIDomainID                  DeviceAttribute = 50
	AttrComputeCapabilityMajor       DeviceAttribute = 75
	AttrComputeCapabilityMinor       DeviceAttribute = 76
	AttrMaxSharedMemoryPerBlockOptin DeviceAttribute = 97
	AttrHostRegisterSupported        DeviceAttribute = 99
)

// FuncAttribute is a CUfunction_attribute that Function.SetAttribute sets.
type FuncAttribute int

// Function attributes.
const (
	// FuncAttrMaxDynamicSharedSizeBytes raises a kernel's dynamic shared
	// memory limit; launches above 48 KiB need it.
	FuncAttrMaxDynamicSharedSizeBytes FuncAttribute = 8
	// FuncAttrPreferredSharedMemoryCarveout is the preferred shared memory
	// share of L1, in percent.
	FuncAttrPreferredSharedMemoryCarveout FuncAttribute = 9
)

// Driver constants used by the cgo implementation.
const (
	memHostAllocPortable  = 0x1 // CU_MEMHOSTALLOC_PORTABLE
	memHostAllocDeviceMap = 0x2 // CU_MEMHOSTALLOC_DEVICEMAP
	ipcLazyPeerAccess     = 0x1 // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
	pointerRangeStart     = 11  // CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
	pointerRangeSize      = 12  // CU_POINTER_ATTRIBUTE_RANGE_SIZE
)
