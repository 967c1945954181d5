//go:build !cgo || !linux

package nccl

import (
	"errors"
	"testing"
)

// TestNCCLStub checks that every NCCL function of the stub build fails
// with ErrUnavailable.
func TestNCCLStub(t *testing.T) {
	var c Comm
	two := func(_ any, err error) error { return err }
	for name, err := range map[string]error{
		"Load":               Load(),
		"Version":            two(Version()),
		"GetUniqueID":        two(GetUniqueID()),
		"CommInitRank":       two(CommInitRank(1, UniqueID{}, 0)),
		"Comm.Destroy":       c.Destroy(),
		"Comm.Abort":         c.Abort(),
		"Comm.AllReduce":     c.AllReduce(0, 0, 1, Float32, Sum, 0),
		"Comm.ReduceScatter": c.ReduceScatter(0, 0, 1, Float32, Sum, 0),
		"Comm.AllGather":     c.AllGather(0, 0, 1, Uint8, 0),
		"Comm.Broadcast":     c.Broadcast(0, 0, 1, Uint8, 0, 0),
		"GroupStart":         GroupStart(),
		"GroupEnd":           GroupEnd(),
	} {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s = %v; want an error matching ErrUnavailable", name, err)
		}
	}
	if name := Library(); name != "" {
		t.Errorf("Library() = %q; want empty", name)
	}
}
