package cuda_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
	"github.com/detcoll/detcoll/internal/tools/devmem"
)

// latencyCase logs rough all-reduce times on two GPUs of their own (no
// assertions: orientation for tuning, not a benchmark, which is detcoll
// bench's job).
var latencyCase = conformance.Case{Name: "DeviceLatency", DeviceWorlds: []int{2}, OwnDevices: true, Limit: 2 * time.Minute,
	Capacity: 32 << 20, Rank: latencyRank, Check: requireOKAndLog}

func TestDeviceLatencyGPU(t *testing.T) { conformance.RunCase(t, backend, &latencyCase) }

// latencyRank prints the time per all-reduce of bf16 at a few sizes,
// pipelined (100 calls between two events) and replayed from a CUDA graph
// of 50 calls.
func latencyRank(r *conformance.Rank) error {
	g, err := openRank(r, driver.StreamNonBlocking)
	if err != nil {
		return err
	}
	defer g.close()
	c, m, s := g.c, g.mem, g.streams[0]
	st := detcoll.Stream(s)
	var events [2]driver.Event
	for i := range events {
		if events[i], err = driver.EventCreate(driver.EventDefault); err != nil {
			return err
		}
		defer events[i].Destroy()
	}
	// timeIt runs body (k calls) between the events, the ranks lined up
	// first, and returns the time per call.
	timeIt := func(k int, body func() error) (time.Duration, error) {
		if err := c.Barrier(); err != nil {
			return 0, err
		}
		events[0].Record(s)
		if err := body(); err != nil {
			return 0, err
		}
		events[1].Record(s)
		if err := c.Synchronize(st); err != nil {
			return 0, err
		}
		d, err := driver.EventElapsed(events[0], events[1])
		return d / time.Duration(k), err
	}
	var lines []string
	for _, bytes := range []int{1 << 10, 64 << 10, 1 << 20, 16 << 20} {
		m.Reset()
		in, err := m.Arena.Alloc(bytes)
		if err != nil {
			return err
		}
		out, err := m.Arena.Alloc(bytes)
		if err != nil {
			return err
		}
		if err := driver.MemsetD8(in, 0x3c, bytes); err != nil {
			return err
		}
		n := bytes / 2
		call := func() error {
			return c.AllReduceDevice(detcoll.DevicePtr(in), detcoll.DevicePtr(out), n, detcoll.TypeBFloat16, st)
		}
		calls := func(k int) func() error {
			return func() error {
				for range k {
					if err := call(); err != nil {
						return err
					}
				}
				return nil
			}
		}
		if err := calls(20)(); err != nil { // warm up
			return err
		}
		if err := c.Synchronize(st); err != nil {
			return err
		}
		pipe, err := timeIt(100, calls(100))
		if err != nil {
			return err
		}
		exec, err := devmem.Capture(s, calls(50))
		if err != nil {
			return err
		}
		exec.Launch(s) // warm up the graph
		if err := c.Synchronize(st); err != nil {
			return err
		}
		gr, err := timeIt(50, func() error { return exec.Launch(s) })
		exec.Destroy()
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%dKiB pipelined %.1fus graph %.1fus", bytes>>10, us(pipe), us(gr)))
	}
	fmt.Printf("rank %d W=%d bf16 all-reduce: %s\n", r.Rank, r.World, strings.Join(lines, "; "))
	return c.Close(context.Background())
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
