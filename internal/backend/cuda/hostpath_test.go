package cuda_test

import (
	"context"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/testkit/gputest"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// BenchmarkHostPathGPU is the host's cost of queueing one small
// all-reduce (1 KiB of bfloat16, one rank, out of place) through the
// public API, beside the cost of queueing one driver operation of the same
// size (a memset), the floor any library that launches work pays: the
// host path of issue 12's "its host path must not cost more than NCCL's".
// The GPU runs what is queued meanwhile; every 256 calls the stream is
// drained, so that the queue never fills (then a launch would wait).
func BenchmarkHostPathGPU(b *testing.B) {
	n, err := devmem.Count()
	gputest.Need(b, 1, n, err)
	g, err := devmem.Open(0)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	c, err := detcoll.Open(context.Background(), detcoll.Options{Backend: "cuda", Capacity: 1 << 20, Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	s, err := driver.StreamCreate(driver.StreamNonBlocking)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Destroy()
	in, err := driver.MemAlloc(1 << 10)
	if err != nil {
		b.Fatal(err)
	}
	defer driver.MemFree(in)
	out, err := driver.MemAlloc(1 << 10)
	if err != nil {
		b.Fatal(err)
	}
	defer driver.MemFree(out)
	if err := driver.MemsetD8(in, 0x3c, 1<<10); err != nil {
		b.Fatal(err)
	}
	drain := func(i int) {
		if i%256 == 255 {
			b.StopTimer()
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.Run("memset", func(b *testing.B) {
		for i := range b.N {
			if err := driver.MemsetD8Async(out, 0, 1<<10, s); err != nil {
				b.Fatal(err)
			}
			drain(i)
		}
	})
	b.Run("all_reduce", func(b *testing.B) {
		for i := range b.N {
			if err := c.AllReduceDevice(detcoll.DevicePtr(in), detcoll.DevicePtr(out), 512, detcoll.TypeBFloat16, detcoll.Stream(s)); err != nil {
				b.Fatal(err)
			}
			drain(i)
		}
	})
	if err := c.Synchronize(detcoll.Stream(s)); err != nil {
		b.Fatal(err)
	}
}
