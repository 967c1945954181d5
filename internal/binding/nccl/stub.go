//go:build !cgo || !linux

package nccl

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// The API of builds without cgo, or off Linux: every function fails with
// an error matching ErrUnavailable, so callers need no build tags.

// dynamicLoading reports whether this build can load NCCL at all.
const dynamicLoading = false

var errNoCgo = fmt.Errorf("%w: this build has no cgo or is not for Linux", ErrUnavailable)

func stub(fn string) error { return fmt.Errorf("%s: %w", fn, errNoCgo) }

// Load always fails: this build cannot load NCCL.
func Load() error { return stub("nccl.Load") }

// Library returns "": nothing is loaded.
func Library() string { return "" }

// Version always fails in this build.
func Version() (int, error) { return 0, stub("nccl.Version") }

// GetUniqueID always fails in this build.
func GetUniqueID() (UniqueID, error) { return UniqueID{}, stub("nccl.GetUniqueID") }

// CommInitRank always fails in this build.
func CommInitRank(world int, id UniqueID, rank int) (Comm, error) {
	return 0, stub("nccl.CommInitRank")
}

// Destroy always fails in this build.
func (c Comm) Destroy() error { return stub("nccl.Comm.Destroy") }

// Abort always fails in this build.
func (c Comm) Abort() error { return stub("nccl.Comm.Abort") }

// AsyncError fails: no NCCL in this build.
func (c Comm) AsyncError() error { return stub("nccl.Comm.AsyncError") }

// AllReduce always fails in this build.
func (c Comm) AllReduce(send, recv driver.DevicePtr, count int, dt DataType, op RedOp, s driver.Stream) error {
	return stub("nccl.Comm.AllReduce")
}

// ReduceScatter always fails in this build.
func (c Comm) ReduceScatter(send, recv driver.DevicePtr, recvCount int, dt DataType, op RedOp, s driver.Stream) error {
	return stub("nccl.Comm.ReduceScatter")
}

// AllGather always fails in this build.
func (c Comm) AllGather(send, recv driver.DevicePtr, sendCount int, dt DataType, s driver.Stream) error {
	return stub("nccl.Comm.AllGather")
}

// Broadcast always fails in this build.
func (c Comm) Broadcast(send, recv driver.DevicePtr, count int, dt DataType, root int, s driver.Stream) error {
	return stub("nccl.Comm.Broadcast")
}

// CreatePreMulSum always fails in this build.
func (c Comm) CreatePreMulSum(scalar []byte, dt DataType) (RedOp, error) {
	return 0, stub("nccl.Comm.CreatePreMulSum")
}

// DestroyRedOp always fails in this build.
func (c Comm) DestroyRedOp(op RedOp) error { return stub("nccl.Comm.DestroyRedOp") }

// Send always fails in this build.
func (c Comm) Send(buf driver.DevicePtr, count int, dt DataType, peer int, s driver.Stream) error {
	return stub("nccl.Comm.Send")
}

// Recv always fails in this build.
func (c Comm) Recv(buf driver.DevicePtr, count int, dt DataType, peer int, s driver.Stream) error {
	return stub("nccl.Comm.Recv")
}

// GroupStart always fails in this build.
func GroupStart() error { return stub("nccl.GroupStart") }

// GroupEnd always fails in this build.
func GroupEnd() error { return stub("nccl.GroupEnd") }
