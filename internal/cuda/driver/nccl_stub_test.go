//go:build !cgo || !linux

package driver

import (
	"errors"
	"testing"
)

// TestNCCLStub checks that every NCCL function of the stub build fails
// with ErrUnavailable.
func TestNCCLStub(t *testing.T) {
	var c NCCLComm
	two := func(_ any, err error) error { return err }
	for name, err := range map[string]error{
		"LoadNCCL":               LoadNCCL(),
		"NCCLVersion":            two(NCCLVersion()),
		"NCCLGetUniqueID":        two(NCCLGetUniqueID()),
		"NCCLCommInitRank":       two(NCCLCommInitRank(1, [NCCLUniqueIDBytes]byte{}, 0)),
		"NCCLComm.Destroy":       c.Destroy(),
		"NCCLComm.Abort":         c.Abort(),
		"NCCLComm.AllReduce":     c.AllReduce(0, 0, 1, NCCLFloat32, NCCLSum, 0),
		"NCCLComm.ReduceScatter": c.ReduceScatter(0, 0, 1, NCCLFloat32, NCCLSum, 0),
		"NCCLComm.AllGather":     c.AllGather(0, 0, 1, NCCLUint8, 0),
		"NCCLComm.Broadcast":     c.Broadcast(0, 0, 1, NCCLUint8, 0, 0),
		"NCCLGroupStart":         NCCLGroupStart(),
		"NCCLGroupEnd":           NCCLGroupEnd(),
	} {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s = %v; want an error matching ErrUnavailable", name, err)
		}
	}
	if name := NCCLLibrary(); name != "" {
		t.Errorf("NCCLLibrary() = %q; want empty", name)
	}
}
