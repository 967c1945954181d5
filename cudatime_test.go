package detcoll_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/cuda/driver"
	"github.com/detcoll/detcoll/internal/ranktest"
)

func init() {
	roles["device-latency"] = roleDeviceLatency
}

// roleDeviceLatency prints the time per all-reduce of bf16 at a few sizes,
// pipelined (100 calls between two events) and replayed from a CUDA graph
// of 50 calls: orientation for the tuning to come, not a benchmark (that
// is detcoll bench's job).
func roleDeviceLatency() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	s, err := driver.StreamCreate(driver.StreamNonBlocking)
	if err != nil {
		return err
	}
	defer s.Destroy()
	st := detcoll.Stream(s)
	start, end := mustEvent(), mustEvent()
	defer start.Destroy()
	defer end.Destroy()
	var lines []string
	for _, bytes := range []int{1 << 10, 64 << 10, 1 << 20, 16 << 20} {
		g.reset()
		n := bytes / 2
		in, out := detcoll.DevicePtr(g.alloc(bytes)), detcoll.DevicePtr(g.alloc(bytes))
		if err := driver.MemsetD8(devPtr(in), 0x3c, bytes); err != nil {
			return err
		}
		call := func() error { return c.AllReduceDevice(in, out, n, detcoll.TypeBFloat16, st) }
		for range 20 { // warm up
			if err := call(); err != nil {
				return err
			}
		}
		if err := c.Synchronize(st); err != nil {
			return err
		}
		timeIt := func(k int, body func() error) (time.Duration, error) {
			if err := c.Barrier(); err != nil { // line the ranks up
				return 0, err
			}
			start.Record(s)
			if err := body(); err != nil {
				return 0, err
			}
			end.Record(s)
			if err := c.Synchronize(st); err != nil {
				return 0, err
			}
			d, err := driver.EventElapsed(start, end)
			return d / time.Duration(k), err
		}
		pipe, err := timeIt(100, func() error {
			for range 100 {
				if err := call(); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := s.BeginCapture(driver.CaptureModeThreadLocal); err != nil {
			return err
		}
		for range 50 {
			if err := call(); err != nil {
				s.EndCapture()
				return err
			}
		}
		graph, err := s.EndCapture()
		if err != nil {
			return err
		}
		exec, err := graph.Instantiate()
		graph.Destroy()
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
	fmt.Printf("rank %d W=%d bf16 all-reduce: %s\n", c.Rank(), c.WorldSize(), strings.Join(lines, "; "))
	return c.Close(ctx)
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

func mustEvent() driver.Event {
	e, err := driver.EventCreate(driver.EventDefault)
	if err != nil {
		panic(err)
	}
	return e
}

// TestDeviceLatencyGPU logs rough all-reduce times (no assertions).
func TestDeviceLatencyGPU(t *testing.T) {
	requireGPUs(t, 2)
	res := ranktest.Run(t, 2, "device-latency", 2*time.Minute, "TEST_CAPACITY=33554432", "TEST_TIMEOUT_MS=20000")
	ranktest.RequireOK(t, res)
	for _, r := range res {
		t.Log(strings.TrimSpace(r.Output))
	}
}
