package nccl

import (
	"bytes"
	"errors"
	"testing"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/testkit/gputest"
	"github.com/detcoll/detcoll/internal/testkit/testseed"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// TestNCCLSingleRankGPU drives the real NCCL through every wrapped call on
// a communicator of one rank on device 0, where each collective is a copy
// that can be checked bit for bit, and checks that NCCL's own errors come
// back as *Error with its text. It skips without a GPU or NCCL.
func TestNCCLSingleRankGPU(t *testing.T) {
	gpuTest(t)
	if err := Load(); err != nil {
		t.Skipf("no NCCL: %v", err)
	}
	v, err := Version()
	check(t, err)
	t.Logf("NCCL %d.%d.%d (code %d) from %s", v/10000, v/100%100, v%100, v, Library())

	id, err := GetUniqueID()
	check(t, err)
	if id == (UniqueID{}) {
		t.Fatal("ncclGetUniqueId returned an all-zero id")
	}
	comm, err := CommInitRank(1, id, 0)
	check(t, err)
	destroyed := false
	t.Cleanup(func() {
		if !destroyed {
			comm.Abort()
		}
	})
	// A blocking stream: work on it waits for the synchronous copies
	// (legacy default stream) that set up its inputs.
	s, err := driver.StreamCreate(driver.StreamDefault)
	check(t, err)
	t.Cleanup(func() { s.Destroy() })

	const n = 1<<16 + 3 // float32 elements
	rng := testseed.Rand(t)
	in := make([]byte, 4*n)
	for i := range in {
		in[i] = byte(rng.Uint32())
	}
	x, y := alloc(t, 4*n), alloc(t, 4*n)
	check(t, driver.MemcpyHtoD(x, in))
	run := func(what string, call func() error) {
		t.Helper()
		check(t, driver.MemsetD8(y, 0x5A, 4*n)) // poison
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		check(t, s.Synchronize())
		got := make([]byte, 4*n)
		check(t, driver.MemcpyDtoH(got, y))
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
	run("ncclAllReduce", func() error { return comm.AllReduce(x, y, n, Float32, Sum, s) })
	run("ncclReduceScatter", func() error { return comm.ReduceScatter(x, y, n, Float32, Sum, s) })
	run("ncclAllGather", func() error { return comm.AllGather(x, y, 4*n, Uint8, s) })
	run("ncclBroadcast", func() error { return comm.Broadcast(x, y, 2*n, Bfloat16, 0, s) })
	run("group", func() error {
		check(t, GroupStart())
		check(t, comm.AllGather(x, y, n, Int32, s))
		check(t, comm.AllReduce(x, y, n/2, Int64, Max, s)) // overwrites the same bytes again
		return GroupEnd()
	})

	err = comm.AllReduce(x, y, n, DataType(99), Sum, s)
	var ne *Error
	if !errors.As(err, &ne) || ne.Result != InvalidArgument || ne.Text == "" {
		t.Errorf("AllReduce of type 99 = %v; want an *Error with ncclInvalidArgument and NCCL's text", err)
	}
	t.Logf("NCCL's error: %v", err)

	check(t, comm.Destroy())
	destroyed = true

	// Abort ends a second communicator.
	id2, err := GetUniqueID()
	check(t, err)
	comm2, err := CommInitRank(1, id2, 0)
	check(t, err)
	check(t, comm2.Abort())
}

// gpuTest opens device 0 on the test goroutine's thread (devmem.Open:
// the thread locked, the primary context current), undone in a cleanup.
// It skips the test where there is no driver or device (fails, under
// DETCOLL_REQUIRE_GPU=1: gputest).
func gpuTest(t *testing.T) {
	t.Helper()
	n, err := devmem.Count()
	if err != nil {
		gputest.Missing(t, "no CUDA driver: %v", err)
		return
	}
	gputest.Need(t, 1, n, nil)
	g, err := devmem.Open(0)
	check(t, err)
	t.Cleanup(g.Close)
}

// alloc returns size bytes of device memory, freed in a cleanup.
func alloc(t *testing.T, size int) driver.DevicePtr {
	t.Helper()
	var a devmem.Arena
	p, err := a.Alloc(size)
	check(t, err)
	t.Cleanup(a.Free)
	return p
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
