package detcoll_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/check"
	"github.com/detcoll/detcoll/internal/ranktest"
)

// The GPU tests: each parent test skips with "cuda: ..." where no GPU is
// here (fails, under DETCOLL_REQUIRE_GPU=1), and otherwise starts its
// ranks through ranktest: one per GPU (device = LOCAL_RANK), or, with
// fewer GPUs than ranks, time-sliced on those there are (gpusFor).

func init() {
	roles["device-reduce"] = roleDeviceReduce
	roles["device-gather"] = roleDeviceGather
}

// llMaxGPU is the cuda backend's default LL threshold at W <= 2 (bytes of
// input), which the sizes below straddle; they span many of its 4 KiB
// windows.
const llMaxGPU = 2 << 20

// deviceReduceCounts are element counts around the cuda paths' thresholds
// (all-reduce: llMaxGPU of input; reduce-scatter: of W*n input) with odd
// tails, tiny sizes and a large odd one.
func deviceReduceCounts(dt detcoll.DType, w int) []int {
	f := llMaxGPU / dt.Size()
	if os.Getenv("TEST_SHORT") != "" {
		return []int{0, 1, 7, f/w + 1, f + 1, 3*f + 5}
	}
	return []int{0, 1, 2, 3, 7, 31, 33, 1000, f/w - 1, f / w, f/w + 1, f - 1, f, f + 1, 3*f + 5, 100003}
}

// roleDeviceReduce checks AllReduceDevice (out of place twice, in place,
// staged), ReduceScatterDevice and ReduceScatterManyDevice against the
// reference tree for every float type, sizes around the thresholds and odd
// element offsets, with guard bytes around every output.
func roleDeviceReduce() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	// The first call of the communicator is a staged all-reduce small
	// enough for LL: its Stage launch refreshes the flags of the receive
	// slot that the call then uses (seq 1), and the call must not take
	// those lines for data.
	first := check.NewReduceCase(testSeed, 0, w, rank, 1000, detcoll.TypeFloat32)
	firstOut, err := g.guarded(4000, 0)
	if err != nil {
		return err
	}
	staging, err := c.StageDevice(1000, detcoll.TypeFloat32, 0)
	if err != nil {
		return err
	}
	if err := g.put(devPtr(staging), first.Ins[rank]); err != nil {
		return err
	}
	if err := c.AllReduceStagedDevice(firstOut.ptr(), 1000, detcoll.TypeFloat32, 0); err != nil {
		return err
	}
	if err := checkDevice(c, detcoll.TypeFloat32, firstOut, first.Want); err != nil {
		return fmt.Errorf("first call, staged: %w", err)
	}
	call, calls := 0, 1
	for _, dt := range floatTypes {
		size := dt.Size()
		for _, n := range deviceReduceCounts(dt, w) {
			rc := check.NewReduceCase(testSeed, call+1, w, rank, n, dt)
			call += 2
			ins, want, rsIns, rsWant := rc.Ins, rc.Want, rc.ScatterIns, rc.ScatterWant
			for _, off := range []int{0, 1, 3} {
				what := fmt.Sprintf("%v n=%d offset=%d", dt, n, off)
				g.reset()
				in, err := g.guarded(n*size, off*size)
				if err != nil {
					return err
				}
				if err := in.write(ins[rank]); err != nil {
					return err
				}
				for rep := range 2 {
					out, err := g.guarded(n*size, off*size)
					if err != nil {
						return err
					}
					if err := c.AllReduceDevice(in.ptr(), out.ptr(), n, dt, 0); err != nil {
						return fmt.Errorf("AllReduceDevice %s: %w", what, err)
					}
					if err := checkDevice(c, dt, out, want); err != nil {
						return fmt.Errorf("AllReduceDevice %s repeat %d: %w", what, rep, err)
					}
					calls++
				}
				if got, err := in.read(); err != nil || !bytes.Equal(got, ins[rank]) {
					return fmt.Errorf("AllReduceDevice %s changed its input (%v)", what, err)
				}

				buf, err := g.guarded(n*size, off*size)
				if err != nil {
					return err
				}
				if err := buf.write(ins[rank]); err != nil {
					return err
				}
				if err := c.AllReduceDevice(buf.ptr(), buf.ptr(), n, dt, 0); err != nil {
					return fmt.Errorf("AllReduceDevice in place %s: %w", what, err)
				}
				if err := checkDevice(c, dt, buf, want); err != nil {
					return fmt.Errorf("AllReduceDevice in place %s: %w", what, err)
				}

				out, err := g.guarded(n*size, off*size)
				if err != nil {
					return err
				}
				staging, err := c.StageDevice(n, dt, 0)
				if err != nil {
					return fmt.Errorf("StageDevice %s: %w", what, err)
				}
				if err := g.put(devPtr(staging), ins[rank]); err != nil {
					return err
				}
				if err := c.AllReduceStagedDevice(out.ptr(), n, dt, 0); err != nil {
					return fmt.Errorf("AllReduceStagedDevice %s: %w", what, err)
				}
				if err := checkDevice(c, dt, out, want); err != nil {
					return fmt.Errorf("AllReduceStagedDevice %s: %w", what, err)
				}

				rsIn, err := g.guarded(w*n*size, off*size)
				if err != nil {
					return err
				}
				if err := rsIn.write(rsIns[rank]); err != nil {
					return err
				}
				rsOut, err := g.guarded(n*size, off*size)
				if err != nil {
					return err
				}
				if err := c.ReduceScatterDevice(rsIn.ptr(), rsOut.ptr(), n, dt, 0); err != nil {
					return fmt.Errorf("ReduceScatterDevice %s: %w", what, err)
				}
				if err := checkDevice(c, dt, rsOut, rsWant); err != nil {
					return fmt.Errorf("ReduceScatterDevice %s: %w", what, err)
				}
				if got, err := rsIn.read(); err != nil || !bytes.Equal(got, rsIns[rank]) {
					return fmt.Errorf("ReduceScatterDevice %s changed its input (%v)", what, err)
				}

				// In place: the output is this rank's share of the input.
				if err := rsIn.write(rsIns[rank]); err != nil {
					return err
				}
				share := rsIn.ptr() + detcoll.DevicePtr(rank*n*size)
				if err := c.ReduceScatterDevice(rsIn.ptr(), share, n, dt, 0); err != nil {
					return fmt.Errorf("ReduceScatterDevice in place %s: %w", what, err)
				}
				if err := c.Synchronize(0); err != nil {
					return err
				}
				got, err := rsIn.read()
				if err != nil {
					return err
				}
				if err := firstDiff(dt, got[rank*n*size:(rank+1)*n*size], rsWant); err != nil {
					return fmt.Errorf("ReduceScatterDevice in place %s: %w", what, err)
				}
				calls += 4
			}
		}
		// ReduceScatterManyDevice equals one ReduceScatterDevice per
		// buffer: four buffers (one kernel when small) and ten (chunked).
		for _, counts := range [][]int{{5, 0, 1000, 17}, {5, 0, 1000, 17, 1, 2, 3, 4, 5, 20001}} {
			g.reset()
			var ins, outs []detcoll.DevicePtr
			var singles [][]byte
			var bufs []*devGuarded
			for _, n := range counts {
				call++
				in, err := g.guarded(w*n*size, size)
				if err != nil {
					return err
				}
				if err := in.write(inputBytes(testSeed, call, rank, w*n, dt)); err != nil {
					return err
				}
				single, err := g.guarded(n*size, 0)
				if err != nil {
					return err
				}
				if err := c.ReduceScatterDevice(in.ptr(), single.ptr(), n, dt, 0); err != nil {
					return err
				}
				if err := c.Synchronize(0); err != nil {
					return err
				}
				s, err := single.read()
				if err != nil {
					return err
				}
				out, err := g.guarded(n*size, 0)
				if err != nil {
					return err
				}
				ins, outs, singles, bufs = append(ins, in.ptr()), append(outs, out.ptr()), append(singles, s), append(bufs, out)
			}
			if err := c.ReduceScatterManyDevice(ins, outs, counts, dt, 0); err != nil {
				return fmt.Errorf("ReduceScatterManyDevice %v %v: %w", dt, counts, err)
			}
			for k := range bufs {
				if err := checkDevice(c, dt, bufs[k], singles[k]); err != nil {
					return fmt.Errorf("ReduceScatterManyDevice %v %v buffer %d differs from ReduceScatterDevice: %w", dt, counts, k, err)
				}
			}
			calls += len(counts) + 1
		}
	}
	fmt.Printf("rank %d: %d device reductions checked\n", rank, calls)
	return c.Close(ctx)
}

// shortEnv passes -short to the ranks, which do not parse flags.
func shortEnv() string {
	if testing.Short() {
		return "TEST_SHORT=1"
	}
	return "TEST_SHORT="
}

// checkDevice waits for the stream, then compares a device output with
// want and checks its guards.
func checkDevice(c *detcoll.Comm, dt detcoll.DType, out *devGuarded, want []byte) error {
	if err := c.Synchronize(0); err != nil {
		return err
	}
	got, err := out.read()
	if err != nil {
		return err
	}
	return firstDiff(dt, got, want)
}

// roleDeviceGather checks AllGatherDevice over the reference system's size
// sweep and offset pairs (out of place and in place), plus one size past
// the LL threshold, AllGatherManyDevice against single calls, and
// BroadcastDevice from every root, with guard bytes.
func roleDeviceGather() error {
	ctx := context.Background()
	c, g, err := openGPURank(ctx)
	if err != nil {
		return err
	}
	defer g.close()
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	u8 := detcoll.TypeUint8
	call, calls := 0, 0
	for _, n := range append(gatherSizes(w), llMaxGPU+5) {
		call++
		ins := make([][]byte, w)
		for p := range ins {
			ins[p] = inputBytes(testSeed, call, p, n, u8)
		}
		want := bytes.Join(ins, nil)
		for _, offs := range [][2]int{{0, 0}, {1, 0}, {0, 3}, {5, 7}} {
			what := fmt.Sprintf("%d bytes offsets %v", n, offs)
			g.reset()
			in, err := g.guarded(n, offs[0])
			if err != nil {
				return err
			}
			if err := in.write(ins[rank]); err != nil {
				return err
			}
			out, err := g.guarded(w*n, offs[1])
			if err != nil {
				return err
			}
			if err := c.AllGatherDevice(in.ptr(), out.ptr(), n, u8, 0); err != nil {
				return fmt.Errorf("AllGatherDevice %s: %w", what, err)
			}
			if err := checkDevice(c, u8, out, want); err != nil {
				return fmt.Errorf("AllGatherDevice %s: %w", what, err)
			}
			if got, err := in.read(); err != nil || !bytes.Equal(got, ins[rank]) {
				return fmt.Errorf("AllGatherDevice %s changed its input (%v)", what, err)
			}
			buf, err := g.guarded(w*n, offs[1])
			if err != nil {
				return err
			}
			if err := g.put(devPtr(buf.ptr())+devPtr(detcoll.DevicePtr(rank*n)), ins[rank]); err != nil {
				return err
			}
			if err := c.AllGatherDevice(buf.ptr()+detcoll.DevicePtr(rank*n), buf.ptr(), n, u8, 0); err != nil {
				return fmt.Errorf("AllGatherDevice in place %s: %w", what, err)
			}
			if err := checkDevice(c, u8, buf, want); err != nil {
				return fmt.Errorf("AllGatherDevice in place %s: %w", what, err)
			}
			calls += 2
		}
	}
	for _, counts := range [][]int{{5, 0, 1000, 17}, {5, 0, 1000, 17, 1, 2, 3, 4, 5, 70001}} {
		g.reset()
		var ins, outs []detcoll.DevicePtr
		var wants [][]byte
		var bufs []*devGuarded
		for _, n := range counts {
			call++
			all := make([][]byte, w)
			for p := range all {
				all[p] = inputBytes(testSeed, call, p, n, u8)
			}
			in, err := g.guarded(n, 1)
			if err != nil {
				return err
			}
			if err := in.write(all[rank]); err != nil {
				return err
			}
			out, err := g.guarded(w*n, 3)
			if err != nil {
				return err
			}
			ins, outs, wants, bufs = append(ins, in.ptr()), append(outs, out.ptr()), append(wants, bytes.Join(all, nil)), append(bufs, out)
		}
		if err := c.AllGatherManyDevice(ins, outs, counts, u8, 0); err != nil {
			return fmt.Errorf("AllGatherManyDevice %v: %w", counts, err)
		}
		for k := range bufs {
			if err := checkDevice(c, u8, bufs[k], wants[k]); err != nil {
				return fmt.Errorf("AllGatherManyDevice %v buffer %d: %w", counts, k, err)
			}
		}
		calls++
	}
	for root := range w {
		for _, n := range []int{0, 1, 1000, 100001, llMaxGPU + 7} {
			call++
			g.reset()
			data := inputBytes(testSeed, call, root, n, u8)
			buf, err := g.guarded(n, 3)
			if err != nil {
				return err
			}
			if rank == root {
				if err := buf.write(data); err != nil {
					return err
				}
			}
			if err := c.BroadcastDevice(buf.ptr(), n, u8, root, 0); err != nil {
				return fmt.Errorf("BroadcastDevice %d bytes from %d: %w", n, root, err)
			}
			if err := checkDevice(c, u8, buf, data); err != nil {
				return fmt.Errorf("BroadcastDevice %d bytes from %d: %w", n, root, err)
			}
			calls++
		}
	}
	fmt.Printf("rank %d: %d device gathers and broadcasts checked\n", rank, calls)
	return c.Close(ctx)
}

func TestDeviceReduceGPU(t *testing.T) {
	for _, w := range []int{1, 2} {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			gpus := gpusFor(t, w)
			res := ranktest.Run(t, w, "device-reduce", 4*time.Minute, gpus, "TEST_CAPACITY=16777216", "TEST_TIMEOUT_MS=20000", shortEnv())
			ranktest.RequireOK(t, res)
			t.Logf("rank 0 said: %s", res[0].Output)
		})
	}
}

func TestDeviceGatherGPU(t *testing.T) {
	for _, w := range []int{1, 2} {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			gpus := gpusFor(t, w)
			res := ranktest.Run(t, w, "device-gather", 3*time.Minute, gpus, "TEST_TIMEOUT_MS=20000")
			ranktest.RequireOK(t, res)
			t.Logf("rank 0 said: %s", res[0].Output)
		})
	}
}

// TestDeviceWiderWorldsGPU runs the reduction and gather checks at W=3 and
// 4 on two GPUs (or one), ranks sharing each (TEST_GPUS): the kernels' code for
// more than two ranks (trees over 3 and 4 leaves, LL with several peers,
// the push path's slots) on the machines we have. Ranks sharing a GPU are
// time-sliced, so the short sizes only, and nothing here is a timing.
func TestDeviceWiderWorldsGPU(t *testing.T) {
	for _, w := range []int{3, 4} {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			gpus := gpusFor(t, 2) // at most two GPUs: ranks share them
			if gpus == "TEST_GPUS=0" {
				gpus = "TEST_GPUS=2"
			}
			for _, role := range []string{"device-reduce", "device-gather"} {
				res := ranktest.Run(t, w, role, 4*time.Minute, gpus, "TEST_CAPACITY=33554432",
					"TEST_TIMEOUT_MS=60000", "TEST_SHORT=1")
				ranktest.RequireOK(t, res)
				t.Logf("%s: rank 0 said: %s", role, res[0].Output)
			}
		})
	}
}
