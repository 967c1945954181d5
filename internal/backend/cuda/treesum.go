package cuda

import (
	"fmt"
	"runtime"
	"time"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
)

// What a call across hosts (internal/backend/hier) needs of the host's cuda
// communicator besides its collectives: scratch memory, stream-ordered
// copies and T over the hosts' sums. Each method runs on a locked thread
// with the communicator's context current (onThread), as every call of
// the backend does.

// onThread runs f with the context current on the calling goroutine's
// thread, locked for the call.
func (c *Comm) onThread(f func() error) error {
	defer runtime.UnlockOSThread()
	if err := c.current(); err != nil {
		return err
	}
	return f()
}

// maxLeaves is the most hosts whose sums treesum.cu adds: its parameter
// holds one address per host.
const maxLeaves = 256

// treeSumArgs is treesum.cu's SumArgs.
type treeSumArgs struct {
	Dst, Count  uint64
	Calc, World uint32
	Src         [maxLeaves]uint64
}

// treeSums is the treesum.cu module of one number of hosts, built at the
// first call that needs it.
type treeSums struct {
	leaves       int
	mod          driver.Module
	sum, average driver.Function
	sign, check  driver.Function // the rail's signature check (railsig.go)
	args         *treeSumArgs    // reused: see Comm.args
}

// Alloc returns n bytes of device memory on this rank's GPU. It may run
// while a call across hosts is captured in a CUDA graph (its first call
// of a size, in the graph): relaxed for the allocation, which the capture
// neither records nor needs to.
func (c *Comm) Alloc(n int) (p uint64, err error) {
	err = c.onThread(func() error {
		prev, merr := driver.ExchangeCaptureMode(driver.CaptureModeRelaxed)
		d, err := driver.MemAlloc(max(n, 1))
		if merr == nil {
			driver.ExchangeCaptureMode(prev)
		}
		p = uint64(d)
		return err
	})
	return p, err
}

// Free releases memory from Alloc; the work that uses it must be done.
func (c *Comm) Free(p uint64) error {
	return c.onThread(func() error { return driver.MemFree(driver.DevicePtr(p)) })
}

// Copy queues a copy of n bytes on stream s.
func (c *Comm) Copy(dst, src uint64, n int, s uintptr) error {
	if n == 0 {
		return nil
	}
	return c.onThread(func() error {
		return driver.MemcpyDtoDAsync(driver.DevicePtr(dst), driver.DevicePtr(src), n, driver.Stream(s))
	})
}

// Zero queues the clearing of n bytes on stream s.
func (c *Comm) Zero(dst uint64, n int, s uintptr) error {
	if n == 0 {
		return nil
	}
	return c.onThread(func() error { return driver.MemsetD8Async(driver.DevicePtr(dst), 0, n, driver.Stream(s)) })
}

// Fence records, on stream s, the point a later WaitFence waits for: the
// end of a call across hosts, whose scratch the next call reuses. An event
// of the communicator's own, since the caller may destroy s meanwhile.
func (c *Comm) Fence(s uintptr) error {
	return c.onThread(func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.fence == 0 {
			e, err := driver.EventCreate(driver.EventDisableTiming)
			if err != nil {
				return err
			}
			c.fence = e
		}
		return c.fence.Record(driver.Stream(s))
	})
}

// WaitFence waits until the work queued before the last Fence is done, or
// until the timeout: a peer that hangs without dying must not hold the
// caller forever.
func (c *Comm) WaitFence(timeout time.Duration) error {
	c.mu.Lock()
	e := c.fence
	c.mu.Unlock()
	if e == 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for spins := 0; ; spins++ {
		var done bool
		err := c.onThread(func() (err error) { done, err = e.Query(); return err })
		switch {
		case err != nil:
			return err
		case done:
			return nil
		case time.Now().After(deadline):
			return &base.TimeoutError{Op: base.OpAllReduce, After: timeout,
				Phase: "waiting for the previous call's GPU work across hosts, before its scratch is reused or freed"}
		}
		if spins < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// Idle reports whether the device finished all its work within d (a
// graph's replays across hosts are fenced by nothing else: hier's Close
// waits so before it frees their scratch).
func (c *Comm) Idle(d time.Duration) bool { return c.idleWithin(d) == nil }

// Capturing reports whether stream s is capturing a CUDA graph.
func (c *Comm) Capturing(s uintptr) (capturing bool, err error) {
	err = c.onThread(func() (err error) { capturing, err = driver.Stream(s).Capturing(); return err })
	return capturing, err
}

// TreeReduce queues on stream s T over len(srcs) arrays of n elements of
// dt into dst, element by element, in order (the hosts' results;
// treesum.cu), node (Sum, Max or Min) at every node, of 2 to maxLeaves
// arrays. dst may be one of srcs (the same memory): each element is read
// before it is written.
func (c *Comm) TreeReduce(dt num.DType, node num.RedOp, dst uint64, srcs []uint64, n int, s uintptr) error {
	if len(srcs) < 2 || len(srcs) > maxLeaves {
		return base.Invalidf("cuda: T over %d hosts' results: want 2 to %d", len(srcs), maxLeaves)
	}
	if node != num.Sum && node != num.Max && node != num.Min {
		return base.Invalidf("cuda: T over hosts' results with %v: not a node operator", node)
	}
	if !node.Supports(dt) {
		return base.Invalidf("cuda: T over hosts' results of %v with %v: not defined", dt, node)
	}
	if n == 0 {
		return nil
	}
	return c.onThread(func() error {
		return c.treeLaunch(len(srcs), func(t *treeSums) driver.Function { return t.sum },
			treeSumArgs{Dst: dst, Count: uint64(n), Calc: calcOf(node, dt)}, srcs, n, s)
	})
}

// Average queues on stream s the division of the n elements of dt at p by
// w, in place, each rounded once (Avg's last step, as num.Average).
func (c *Comm) Average(dt num.DType, p uint64, n, w int, s uintptr) error {
	if !num.Avg.Supports(dt) || w < 1 {
		return base.Invalidf("cuda: the average of %v by %d: not defined", dt, w)
	}
	if n == 0 {
		return nil
	}
	return c.onThread(func() error {
		return c.treeLaunch(2, func(t *treeSums) driver.Function { return t.average },
			treeSumArgs{Dst: p, Count: uint64(n), Calc: calcOf(num.Avg, dt), World: uint32(w)}, nil, n, s)
	})
}

// treeLaunch launches the kernel fn picks of the module of leaves with
// args and srcs, on the context's thread.
func (c *Comm) treeLaunch(leaves int, fn func(*treeSums) driver.Function, args treeSumArgs, srcs []uint64, n int, s uintptr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.treeSums(leaves)
	if err != nil {
		return err
	}
	*t.args = args
	copy(t.args.Src[:], srcs)
	grid := uint32(min(max(c.plan.maxBlocks, c.plan.resident), (n+block-1)/block)) // it never waits: the whole GPU
	return driver.LaunchStruct(fn(t), driver.LaunchConfig{Grid: driver.Dim3{X: grid, Y: 1, Z: 1},
		Block: driver.Dim3{X: block, Y: 1, Z: 1}, Stream: driver.Stream(s)}, t.args)
}

// treeSums returns the module for this many leaves (the hosts; 2 for a
// step of halving), compiling it (or finding it in the disk cache) the
// first time. c.mu is held, the context current.
func (c *Comm) treeSums(leaves int) (*treeSums, error) {
	if t := c.sums[leaves]; t != nil {
		return t, nil
	}
	arch, err := c.dev.Arch()
	if err != nil {
		return nil, err
	}
	opts := append(compileOptions(1, 64), fmt.Sprintf("-DDC_LEAVES=%d", leaves))
	cubin, err := driver.BuildKernel(source("treesum.cu"), "treesum.cu", arch, opts)
	if err != nil {
		return nil, fmt.Errorf("compile treesum.cu for %s: %w", arch, err)
	}
	mod, err := driver.ModuleLoadData(cubin)
	if err != nil {
		return nil, err
	}
	t := &treeSums{leaves: leaves, mod: mod, args: new(treeSumArgs)}
	for _, f := range []struct {
		fn   *driver.Function
		name string
	}{{&t.sum, "dc_treesum"}, {&t.average, "dc_average"}, {&t.sign, "dc_rail_sign"}, {&t.check, "dc_rail_check"}} {
		if err == nil {
			*f.fn, err = mod.Function(f.name)
		}
	}
	if err != nil {
		mod.Unload()
		return nil, err
	}
	if c.sums == nil {
		c.sums = map[int]*treeSums{}
	}
	c.sums[leaves] = t
	return t, nil
}
