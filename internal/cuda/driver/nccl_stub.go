//go:build !cgo || !linux

package driver

// The NCCL API of builds without cgo, or off Linux: every function fails
// with an error matching ErrUnavailable, as in stub.go.

// LoadNCCL always fails: this build cannot load NCCL.
func LoadNCCL() error { return stub("LoadNCCL") }

// NCCLLibrary returns "": nothing is loaded.
func NCCLLibrary() string { return "" }

// NCCLVersion always fails in this build.
func NCCLVersion() (int, error) { return 0, stub("NCCLVersion") }

// NCCLGetUniqueID always fails in this build.
func NCCLGetUniqueID() ([NCCLUniqueIDBytes]byte, error) {
	return [NCCLUniqueIDBytes]byte{}, stub("NCCLGetUniqueID")
}

// NCCLCommInitRank always fails in this build.
func NCCLCommInitRank(world int, id [NCCLUniqueIDBytes]byte, rank int) (NCCLComm, error) {
	return 0, stub("NCCLCommInitRank")
}

// Destroy always fails in this build.
func (c NCCLComm) Destroy() error { return stub("NCCLComm.Destroy") }

// Abort always fails in this build.
func (c NCCLComm) Abort() error { return stub("NCCLComm.Abort") }

// AllReduce always fails in this build.
func (c NCCLComm) AllReduce(send, recv DevicePtr, count int, dt NCCLDataType, op NCCLRedOp, s Stream) error {
	return stub("NCCLComm.AllReduce")
}

// ReduceScatter always fails in this build.
func (c NCCLComm) ReduceScatter(send, recv DevicePtr, recvCount int, dt NCCLDataType, op NCCLRedOp, s Stream) error {
	return stub("NCCLComm.ReduceScatter")
}

// AllGather always fails in this build.
func (c NCCLComm) AllGather(send, recv DevicePtr, sendCount int, dt NCCLDataType, s Stream) error {
	return stub("NCCLComm.AllGather")
}

// Broadcast always fails in this build.
func (c NCCLComm) Broadcast(send, recv DevicePtr, count int, dt NCCLDataType, root int, s Stream) error {
	return stub("NCCLComm.Broadcast")
}

// NCCLGroupStart always fails in this build.
func NCCLGroupStart() error { return stub("NCCLGroupStart") }

// NCCLGroupEnd always fails in this build.
func NCCLGroupEnd() error { return stub("NCCLGroupEnd") }
