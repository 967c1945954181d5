//go:build cgo && linux

package driver

/*
#include "cudrv.h"
*/
import "C"

import "fmt"

// DriverVersion returns the CUDA version the driver supports, as
// 1000*major + 10*minor (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	var v C.int
	if r := C.dc_cuDriverGetVersion(&v); r != 0 {
		return 0, cuErr(r, "cuDriverGetVersion")
	}
	return int(v), nil
}

// DeviceCount returns the number of CUDA devices visible to the process
// (after CUDA_VISIBLE_DEVICES).
func DeviceCount() (int, error) {
	var n C.int
	if r := C.dc_cuDeviceGetCount(&n); r != 0 {
		return 0, cuErr(r, "cuDeviceGetCount")
	}
	return int(n), nil
}

// DeviceGet returns the device with the given ordinal.
func DeviceGet(ordinal int) (Device, error) {
	var d C.CUdevice
	if r := C.dc_cuDeviceGet(&d, C.int(ordinal)); r != 0 {
		return 0, cuErr(r, "cuDeviceGet", ordinal)
	}
	return Device(d), nil
}

// Name returns the device's product name, such as "NVIDIA H200".
func (d Device) Name() (string, error) {
	var buf [256]C.char
	if r := C.dc_cuDeviceGetName(&buf[0], C.int(len(buf)), C.CUdevice(d)); r != 0 {
		return "", cuErr(r, "cuDeviceGetName", int(d))
	}
	return C.GoString(&buf[0]), nil
}

// Attribute returns one of the device's attributes.
func (d Device) Attribute(a DeviceAttribute) (int, error) {
	var v C.int
	if r := C.dc_cuDeviceGetAttribute(&v, C.int(a), C.CUdevice(d)); r != 0 {
		return 0, cuErr(r, "cuDeviceGetAttribute", int(a), int(d))
	}
	return int(v), nil
}

// ComputeCapability returns the device's compute capability (9, 0 for H100
// and H200).
func (d Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	if minor, err = d.Attribute(AttrComputeCapabilityMinor); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// Arch returns the NVRTC architecture name of the device, such as "sm_90".
func (d Device) Arch() (string, error) {
	major, minor, err := d.ComputeCapability()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("sm_%d%d", major, minor), nil
}

// PCIBusID returns the device's PCI address, "dddd:bb:dd.f".
func (d Device) PCIBusID() (string, error) {
	var buf [64]C.char
	if r := C.dc_cuDeviceGetPCIBusId(&buf[0], C.int(len(buf)), C.CUdevice(d)); r != 0 {
		return "", cuErr(r, "cuDeviceGetPCIBusId", int(d))
	}
	return C.GoString(&buf[0]), nil
}

// CanAccessPeer reports whether d can map peer's memory directly (peer
// access, or memory opened by IPCOpenMemHandle without staging).
func (d Device) CanAccessPeer(peer Device) (bool, error) {
	var ok C.int
	if r := C.dc_cuDeviceCanAccessPeer(&ok, C.CUdevice(d), C.CUdevice(peer)); r != 0 {
		return false, cuErr(r, "cuDeviceCanAccessPeer", int(d), int(peer))
	}
	return ok != 0, nil
}

// PrimaryCtxRetain returns the device's primary context, creating it on
// first use, and takes a reference that PrimaryCtxRelease drops. The primary
// context is the one the CUDA runtime, NCCL and PyTorch share in a process.
func (d Device) PrimaryCtxRetain() (Context, error) {
	var c C.CUcontext
	if r := C.dc_cuDevicePrimaryCtxRetain(&c, C.CUdevice(d)); r != 0 {
		return 0, cuErr(r, "cuDevicePrimaryCtxRetain", int(d))
	}
	return Context(c), nil
}

// PrimaryCtxRelease drops a reference taken by PrimaryCtxRetain; the last
// one destroys the context and everything made in it.
func (d Device) PrimaryCtxRelease() error {
	if r := C.dc_cuDevicePrimaryCtxRelease(C.CUdevice(d)); r != 0 {
		return cuErr(r, "cuDevicePrimaryCtxRelease_v2", int(d))
	}
	return nil
}
