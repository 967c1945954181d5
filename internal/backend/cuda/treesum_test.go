package cuda_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/backend/cuda"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/gputest"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// TestTreeReduceGPU: treesum.cu's T over H arrays (a call across hosts'
// last step) equals the reference tree over H leaves
// (check.ReferenceReduce, exact), bit for bit, with every node operator,
// for every type, odd sizes and H not a power of two, inputs with NaNs,
// infinities and subnormals; and its Average equals num.Average. Nothing
// past the output is written.
func TestTreeReduceGPU(t *testing.T) {
	n, err := devmem.Count()
	gputest.Need(t, 1, n, err)
	g, err := devmem.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, leaves := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("H=%d", leaves), func(t *testing.T) {
			c, err := cuda.Open(context.Background(), cuda.Config{World: 1, Capacity: 1 << 20, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			for dt := num.BFloat16Type; dt <= num.Uint64Type; dt++ {
				for _, node := range []num.RedOp{num.Sum, num.Max, num.Min, num.Avg} {
					for _, n := range []int{1, 7, 1000, 70001} {
						treeReduceCase(t, c, leaves, dt, node, n)
					}
				}
			}
		})
	}
}

// treeReduceCase checks TreeReduce with node, or, for Avg, Average of
// the first leaf by the number of leaves.
func treeReduceCase(t *testing.T, c *cuda.Comm, leaves int, dt num.DType, node num.RedOp, n int) {
	t.Helper()
	size := dt.Size()
	ins := make([][]byte, leaves)
	for h := range ins {
		ins[h] = check.Input(9, n, h, n, dt)
	}
	var want []byte
	if node == num.Avg {
		want = append([]byte(nil), ins[0]...)
		num.Average(dt, want, leaves)
	} else {
		want = check.ReferenceReduce(dt, node, ins, nil)
	}
	const guard = 64
	out, err := c.Alloc(n*size + guard)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(out)
	srcs := make([]uint64, leaves)
	for h := range srcs {
		if srcs[h], err = c.Alloc(n * size); err != nil {
			t.Fatal(err)
		}
		defer c.Free(srcs[h])
	}
	for h := range srcs {
		if err := driver.MemcpyHtoD(driver.DevicePtr(srcs[h]), ins[h]); err != nil {
			t.Fatal(err)
		}
	}
	if err := driver.MemsetD8(driver.DevicePtr(out), 0xa5, n*size+guard); err != nil {
		t.Fatal(err)
	}
	if node == num.Avg {
		err = driver.MemcpyHtoD(driver.DevicePtr(out), ins[0])
		if err == nil {
			err = c.Average(dt, out, n, leaves, 0)
		}
	} else {
		err = c.TreeReduce(dt, node, out, srcs, n, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Synchronize(0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n*size+guard)
	if err := driver.MemcpyDtoH(got, driver.DevicePtr(out)); err != nil {
		t.Fatal(err)
	}
	if err := check.FirstDiff(dt, got[:n*size], want); err != nil {
		t.Fatalf("%v %v n=%d: %v", node, dt, n, err)
	}
	for i, b := range got[n*size:] {
		if b != 0xa5 {
			t.Fatalf("%v %v n=%d: guard byte %d past the output changed to %#x", node, dt, n, i, b)
		}
	}
}
