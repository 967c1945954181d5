//go:build !cgo || !linux

package driver

import (
	"errors"
	"testing"
)

// TestStub checks that every function of the stub build fails with
// ErrUnavailable.
func TestStub(t *testing.T) {
	var (
		d Device
		c Context
		s Stream
		e Event
		m Module
		f Function
		g Graph
		x GraphExec
		h HostMem
	)
	two := func(_ any, err error) error { return err }
	three := func(_, _ any, err error) error { return err }
	for name, err := range map[string]error{
		"Load":                      Load(),
		"Unload":                    Unload(),
		"DriverVersion":             two(DriverVersion()),
		"DeviceCount":               two(DeviceCount()),
		"DeviceGet":                 two(DeviceGet(0)),
		"Device.Name":               two(d.Name()),
		"Device.Attribute":          two(d.Attribute(AttrWarpSize)),
		"Device.ComputeCapability":  three(d.ComputeCapability()),
		"Device.Arch":               two(d.Arch()),
		"Device.PCIBusID":           two(d.PCIBusID()),
		"Device.CanAccessPeer":      two(d.CanAccessPeer(1)),
		"Device.PrimaryCtxRetain":   two(d.PrimaryCtxRetain()),
		"Device.PrimaryCtxRelease":  d.PrimaryCtxRelease(),
		"Context.SetCurrent":        c.SetCurrent(),
		"CurrentContext":            two(CurrentContext()),
		"Context.PushCurrent":       c.PushCurrent(),
		"PopCurrent":                two(PopCurrent()),
		"CtxSynchronize":            CtxSynchronize(),
		"MemGetInfo":                three(MemGetInfo()),
		"MemAlloc":                  two(MemAlloc(1)),
		"MemFree":                   MemFree(0),
		"MemsetD8":                  MemsetD8(0, 0, 1),
		"MemsetD8Async":             MemsetD8Async(0, 0, 1, s),
		"MemcpyHtoD":                MemcpyHtoD(0, []byte{1}),
		"MemcpyDtoH":                MemcpyDtoH(make([]byte, 1), 0),
		"MemcpyDtoD":                MemcpyDtoD(0, 0, 1),
		"MemcpyHtoDAsync":           MemcpyHtoDAsync(0, h, s),
		"MemcpyDtoHAsync":           MemcpyDtoHAsync(h, 0, s),
		"MemcpyDtoDAsync":           MemcpyDtoDAsync(0, 0, 1, s),
		"PointerRange":              three(PointerRange(0)),
		"MemHostAllocMapped":        two(MemHostAllocMapped(1)),
		"MemFreeHost":               MemFreeHost(h),
		"MemHostGetDevicePointer":   two(MemHostGetDevicePointer(h)),
		"MemHostRegister":           two(MemHostRegister(make([]byte, 1), 0)),
		"MemHostUnregister":         MemHostUnregister(h),
		"IPCGetMemHandle":           two(IPCGetMemHandle(0)),
		"IPCOpenMemHandle":          two(IPCOpenMemHandle(IPCMemHandle{})),
		"IPCCloseMemHandle":         IPCCloseMemHandle(0),
		"MemAllocationGranularity":  two(MemAllocationGranularity(d, MemHandlePosixFD, GranularityMinimum)),
		"MemCreate":                 two(MemCreate(1<<21, d, MemHandlePosixFD)),
		"MemRelease":                MemRelease(0),
		"MemRetainAllocationHandle": two(MemRetainAllocationHandle(0)),
		"MemGetAddressRange":        three(MemGetAddressRange(0)),
		"MemExportFD":               two(MemExportFD(0)),
		"MemImportFD":               two(MemImportFD(0)),
		"MemAddressReserve":         two(MemAddressReserve(1<<21, 0)),
		"MemAddressFree":            MemAddressFree(0, 1<<21),
		"MemMap":                    MemMap(0, 1<<21, 0),
		"MemUnmap":                  MemUnmap(0, 1<<21),
		"MemSetAccess":              MemSetAccess(0, 1<<21, d),
		"MemAllocShareable":         three(MemAllocShareable(d, 1)),
		"MemMapNew":                 two(MemMapNew(0, 1<<21, 0, d)),
		"MemFreeShareable":          MemFreeShareable(0),
		"StreamCreate":              two(StreamCreate(StreamNonBlocking)),
		"Stream.Destroy":            s.Destroy(),
		"Stream.Synchronize":        s.Synchronize(),
		"Stream.Query":              two(s.Query()),
		"Stream.WaitEvent":          s.WaitEvent(e),
		"Stream.BeginCapture":       s.BeginCapture(CaptureModeThreadLocal),
		"Stream.EndCapture":         two(s.EndCapture()),
		"EventCreate":               two(EventCreate(EventDefault)),
		"Event.Destroy":             e.Destroy(),
		"Event.Record":              e.Record(s),
		"Event.Synchronize":         e.Synchronize(),
		"Event.Query":               two(e.Query()),
		"EventElapsed":              two(EventElapsed(e, e)),
		"ModuleLoadData":            two(ModuleLoadData([]byte{1})),
		"Module.Unload":             m.Unload(),
		"Module.Function":           two(m.Function("k")),
		"Function.SetAttribute":     f.SetAttribute(FuncAttrMaxDynamicSharedSizeBytes, 1),
		"Function.Launch":           f.Launch(LaunchConfig{}),
		"Graph.Instantiate":         two(g.Instantiate()),
		"Graph.Destroy":             g.Destroy(),
		"GraphExec.Launch":          x.Launch(s),
		"GraphExec.Destroy":         x.Destroy(),
		"NVRTCVersion":              three(NVRTCVersion()),
		"Compile":                   two(Compile("", "k.cu", nil)),
		"BuildKernel":               two(BuildKernel(nil, "k.cu", "sm_90", nil)),
	} {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s = %v; want an error matching ErrUnavailable", name, err)
		}
	}
	if cuda, nvrtc := Libraries(); cuda != "" || nvrtc != "" {
		t.Errorf("Libraries() = %q, %q; want empty", cuda, nvrtc)
	}
}
