package driver

import (
	"bytes"
	"errors"
	"testing"
)

// TestNCCLSingleRankGPU drives the real NCCL through every wrapped call on
// a communicator of one rank on device 0, where each collective is a copy
// that can be checked bit for bit, and checks that NCCL's own errors come
// back as *NCCLError with its text. It skips without a GPU or NCCL.
func TestNCCLSingleRankGPU(t *testing.T) {
	gpuTest(t)
	if err := LoadNCCL(); err != nil {
		t.Skipf("no NCCL: %v", err)
	}
	v, err := NCCLVersion()
	check(t, err)
	t.Logf("NCCL %d.%d.%d (code %d) from %s", v/10000, v/100%100, v%100, v, NCCLLibrary())

	id, err := NCCLGetUniqueID()
	check(t, err)
	if id == ([NCCLUniqueIDBytes]byte{}) {
		t.Fatal("ncclGetUniqueId returned an all-zero id")
	}
	comm, err := NCCLCommInitRank(1, id, 0)
	check(t, err)
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			comm.Abort()
		}
	})
	// A blocking stream: work on it waits for the synchronous copies
	// (legacy default stream) that set up its inputs.
	s, err := StreamCreate(StreamDefault)
	check(t, err)
	t.Cleanup(func() { s.Destroy() })

	const n = 1<<16 + 3 // float32 elements
	rng := seeded(t)
	in := make([]byte, 4*n)
	for i := range in {
		in[i] = byte(rng.Uint32())
	}
	x, y := alloc(t, 4*n), alloc(t, 4*n)
	check(t, MemcpyHtoD(x, in))
	run := func(what string, call func() error) {
		t.Helper()
		check(t, MemsetD8(y, 0x5A, 4*n)) // poison
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		check(t, s.Synchronize())
		got := make([]byte, 4*n)
		check(t, MemcpyDtoH(got, y))
		// One rank: a sum is the input itself, NaN payloads included (NCCL
		// adds nothing to a lone contribution).
		if !bytes.Equal(got, in) {
			i := 0
			for got[i] == in[i] {
				i++
			}
			t.Errorf("%s: byte %d = %#x; want %#x", what, i, got[i], in[i])
		}
	}
	run("ncclAllReduce", func() error { return comm.AllReduce(x, y, n, NCCLFloat32, NCCLSum, s) })
	run("ncclReduceScatter", func() error { return comm.ReduceScatter(x, y, n, NCCLFloat32, NCCLSum, s) })
	run("ncclAllGather", func() error { return comm.AllGather(x, y, 4*n, NCCLUint8, s) })
	run("ncclBroadcast", func() error { return comm.Broadcast(x, y, 2*n, NCCLBfloat16, 0, s) })
	run("group", func() error {
		check(t, NCCLGroupStart())
		check(t, comm.AllGather(x, y, n, NCCLInt32, s))
		check(t, comm.AllReduce(x, y, n/2, NCCLInt64, NCCLMax, s)) // overwrites the same bytes again
		return NCCLGroupEnd()
	})

	err = comm.AllReduce(x, y, n, NCCLDataType(99), NCCLSum, s)
	var ne *NCCLError
	if !errors.As(err, &ne) || ne.Result != NCCLInvalidArgument || ne.Text == "" {
		t.Errorf("AllReduce of type 99 = %v; want an *NCCLError with ncclInvalidArgument and NCCL's text", err)
	}
	t.Logf("NCCL's error: %v", err)

	check(t, comm.Destroy())
	destroyed = true

	// Abort ends a second communicator.
	id2, err := NCCLGetUniqueID()
	check(t, err)
	comm2, err := NCCLCommInitRank(1, id2, 0)
	check(t, err)
	check(t, comm2.Abort())
}
