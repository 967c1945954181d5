package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// The failure cases on every memory: ranks that disagree, skip a call,
// die or abort, and every other rank's error.

func failureCases() []Case {
	var cases []Case
	for _, mm := range mismatches {
		var device []int
		if mm.device {
			device = []int{2}
		}
		cases = append(cases, Case{Name: "MismatchFailsEveryRank/" + mm.name, Worlds: []int{2, 3}, DeviceWorlds: device,
			Limit: time.Minute, Timeout: 20 * time.Second, Rank: withMemory(mm.rank)})
	}
	cases = append(cases, Case{Name: "SkippedCallTimesOut", Worlds: []int{3}, DeviceWorlds: []int{2},
		Limit: time.Minute, Timeout: time.Second, Rank: withMemory(skipRank)})
	for _, k := range kills {
		c := Case{Name: "KilledRankFailsEveryRankPromptly/victim=" + strconv.Itoa(k.victim), Worlds: []int{k.world},
			Limit: time.Minute, Timeout: 30 * time.Second, Rank: withMemory(k.rank), Check: k.check}
		if k.device {
			c.DeviceWorlds = []int{k.world}
		}
		cases = append(cases, c)
	}
	cases = append(cases, Case{Name: "Abort", Worlds: []int{2}, DeviceWorlds: []int{2}, Limit: time.Minute,
		Timeout: 20 * time.Second, Rank: withMemory(abortRank)})
	return append(cases, hostFailureCases()...)
}

// mismatch is a pair of calls that differ in their signatures: the last
// rank makes odd, the others make others.
type mismatch struct {
	name        string
	device      bool // also on device backends
	others, odd mismatchCall
}

// mismatchCall makes a call on buffers it allocates in m, which it
// returns: whatever the call's outcome, they must still hold guard bytes
// only, since a mismatched call computes nothing.
type mismatchCall func(c *detcoll.Comm, m check.Memory) ([]check.Buffer, error)

var f32 = detcoll.TypeFloat32

func allReduce(n int, dt detcoll.DType) mismatchCall {
	return func(c *detcoll.Comm, m check.Memory) ([]check.Buffer, error) {
		bufs, err := check.AllocAll(m, []int{n * dt.Size(), n * dt.Size()}, 0)
		if err != nil {
			return nil, err
		}
		return bufs, m.AllReduce(c, dt, bufs[0], bufs[1])
	}
}

func broadcastFrom(root int) mismatchCall {
	return func(c *detcoll.Comm, m check.Memory) ([]check.Buffer, error) {
		buf, err := m.Alloc(4000, 0)
		if err != nil {
			return nil, err
		}
		return []check.Buffer{buf}, m.Broadcast(c, f32, buf, root)
	}
}

// gatherMany gathers float32 buffers of counts elements.
func gatherMany(counts ...int) mismatchCall {
	return func(c *detcoll.Comm, m check.Memory) ([]check.Buffer, error) {
		var lens, outLens []int
		for _, n := range counts {
			lens, outLens = append(lens, 4*n), append(outLens, 4*n*c.WorldSize())
		}
		ins, err := check.AllocAll(m, lens, 0)
		if err != nil {
			return nil, err
		}
		outs, err := check.AllocAll(m, outLens, 0)
		if err != nil {
			return nil, err
		}
		return append(ins, outs...), m.AllGatherMany(c, f32, ins, outs)
	}
}

var mismatches = []mismatch{
	{name: "op", device: true, others: allReduce(1000, f32),
		odd: func(c *detcoll.Comm, m check.Memory) ([]check.Buffer, error) {
			bufs, err := check.AllocAll(m, []int{4000, 4000 * c.WorldSize()}, 0)
			if err != nil {
				return nil, err
			}
			return bufs, m.AllGather(c, f32, bufs[0], bufs[1])
		}},
	{name: "dtype", others: allReduce(1000, f32), odd: allReduce(1000, detcoll.TypeFloat64)},
	{name: "count", others: allReduce(1000, f32), odd: allReduce(999, f32)},
	{name: "op-root", others: allReduce(1000, f32), odd: broadcastFrom(0)},
	{name: "root", others: broadcastFrom(0), odd: broadcastFrom(1)},
	{name: "layout", others: gatherMany(500, 500), odd: gatherMany(10, 990)},
	{name: "redop", device: true, others: allReduce(1000, f32), odd: allReduceWith(1000, f32, detcoll.Max)},
	// Past the one-shot sizes, on the push path on a GPU.
	{name: "redop-large", device: true, others: allReduceWith(600000, f32, detcoll.Avg),
		odd: allReduceWith(600000, f32, detcoll.Min)},
}

// allReduceWith is allReduce with operator op.
func allReduceWith(n int, dt detcoll.DType, op detcoll.RedOp) mismatchCall {
	return func(c *detcoll.Comm, m check.Memory) ([]check.Buffer, error) {
		bufs, err := check.AllocAll(m, []int{n * dt.Size(), n * dt.Size()}, 0)
		if err != nil {
			return nil, err
		}
		return bufs, m.Reduce(c, check.CallAllReduce, dt, op, bufs[:1], bufs[1:])
	}
}

// rank: the last rank calls something else; every rank must fail with a
// *MismatchError listing every rank's signature, the last alone
// differing, write nothing, then stay failed.
func (mm mismatch) rank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	w := r.World
	call := mm.others
	if r.Rank == w-1 {
		call = mm.odd
	}
	start := time.Now()
	bufs, err := call(c, m)
	var me *detcoll.MismatchError
	if !errors.Is(err, detcoll.ErrMismatch) || !errors.As(err, &me) {
		return fmt.Errorf("got %v, want a *MismatchError", err)
	}
	if len(me.Signatures) != w {
		return fmt.Errorf("mismatch lists %d signatures, want %d: %v", len(me.Signatures), w, err)
	}
	for p, s := range me.Signatures {
		if (s == me.Signatures[0]) == (p == w-1) {
			return fmt.Errorf("signature of rank %d is %v: want the last rank alone to differ: %v", p, s, err)
		}
	}
	fmt.Printf("rank %d: after %v: %v\n", r.Rank, time.Since(start).Round(time.Microsecond), err)
	for i, b := range bufs {
		if err := check.Expect(detcoll.TypeUint8, b, guardBytes(b.Len())); err != nil {
			return fmt.Errorf("buffer %d of the mismatched call was written: %w", i, err)
		}
	}
	if _, err := allReduce(1000, f32)(c, m); !errors.Is(err, detcoll.ErrMismatch) {
		return fmt.Errorf("call after a mismatch: got %v, want the cause again", err)
	}
	return nil
}

// guardBytes is what a buffer never written holds.
func guardBytes(n int) []byte { return bytes.Repeat([]byte{check.GuardByte}, n) }

// skipRank: the last rank skips a call; the others must get a timeout
// naming the operation and the missing rank, and the skipper the same
// timeout from its next call.
func skipRank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	w := r.World
	if r.Rank == w-1 {
		time.Sleep(3 * time.Second)
		// By now the others have timed out waiting for this rank and
		// said so.
		var te *detcoll.TimeoutError
		if err := c.Barrier(); !errors.Is(err, detcoll.ErrTimeout) || !errors.As(err, &te) ||
			len(te.Missing) != 1 || te.Missing[0] != r.Rank {
			return fmt.Errorf("skipper's next call: got %v, want the others' timeout naming this rank", err)
		}
		return nil
	}
	start := time.Now()
	_, err := allReduce(10, f32)(c, m)
	// Either this rank timed out itself, or a faster peer did and told it:
	// both are the same *TimeoutError, naming AllReduce's missing rank.
	var te *detcoll.TimeoutError
	if !errors.As(err, &te) || te.Op.String() != "AllReduce" || len(te.Missing) != 1 || te.Missing[0] != w-1 ||
		!errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("got %v, want a timeout naming AllReduce and rank %d alone", err, w-1)
	}
	fmt.Printf("rank %d: after %v: %v\n", r.Rank, time.Since(start).Round(time.Millisecond), err)
	return nil
}

// killCase kills victim, one of world ranks, amid calls.
type killCase struct {
	world, victim int
	device        bool // also on device backends
}

var kills = []killCase{{2, 1, true}, {4, 2, false}, {4, 0, false}}

// rank: every rank all-reduces in a loop, alternating the backend's
// paths; the victim kills itself with SIGKILL in the middle. The others
// must fail with a *RankError naming it, printing when they noticed (the
// victim prints when it died); then each opens a communicator of one rank
// (on its device, if any), which works.
func (k killCase) rank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	ctx := context.Background()
	paths := r.Backend.Paths
	largest := 4 * slices.Max(paths)
	bufs, err := check.AllocAll(m, []int{largest, largest}, 0)
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		if r.Rank == k.victim && i == 300 {
			fmt.Printf("KILL %d\n", time.Now().UnixNano())
			syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		}
		n := 4 * paths[i%len(paths)]
		if err = m.AllReduce(c, f32, bufs[0].Slice(0, n), bufs[1].Slice(0, n)); err != nil {
			break
		}
	}
	fmt.Printf("DETECTED %d %v\n", time.Now().UnixNano(), err)
	var re *detcoll.RankError
	if !errors.Is(err, detcoll.ErrPeerLost) || !errors.As(err, &re) || re.Rank != k.victim {
		return fmt.Errorf("got %v, want a *RankError naming rank %d", err, k.victim)
	}
	c.Close(ctx)
	return oneRankWorks(ctx, r, c.Device(), m)
}

// oneRankWorks opens a communicator of one rank on device (a cuda
// backend's; -1 for none) and checks an all-reduce of 1.0 on m.
func oneRankWorks(ctx context.Context, r *Rank, device int, m check.Memory) error {
	o := detcoll.Options{Backend: r.Backend.Name, WorldSize: 1, Capacity: 1 << 20}
	if device >= 0 {
		o.Device = device
	}
	c, err := detcoll.Open(ctx, o)
	if err != nil {
		return fmt.Errorf("new communicator after the failure: %w", err)
	}
	defer c.Close(ctx)
	one := []byte{0, 0, 0x80, 0x3f}
	m.Reset()
	in, err := check.Alloc(m, 4, 0, one)
	if err != nil {
		return err
	}
	out, err := m.Alloc(4, 0)
	if err != nil {
		return err
	}
	if err := m.AllReduce(c, f32, in, out); err != nil {
		return fmt.Errorf("new communicator: %w", err)
	}
	if err := check.Expect(f32, out, one); err != nil {
		return fmt.Errorf("new communicator: %w", err)
	}
	return c.Close(ctx)
}

var timeRE = regexp.MustCompile(`(KILL|DETECTED) (\d+)`)

// stamp returns the time a rank printed after what ("KILL", "DETECTED").
func stamp(out, what string) (int64, bool) {
	for _, m := range timeRE.FindAllStringSubmatch(out, -1) {
		if m[1] == what {
			v, err := strconv.ParseInt(m[2], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// check: the victim died by SIGKILL; every survivor passed and failed
// within 1 s of the kill.
func (k killCase) check(t *testing.T, world int, res []ranktest.Result) {
	killed, ok := stamp(res[k.victim].Output, "KILL")
	if res[k.victim].Signal != syscall.SIGKILL || !ok {
		t.Fatalf("victim did not die by SIGKILL as planned: %+v", res[k.victim])
	}
	var worst time.Duration
	for _, r := range res {
		if r.Rank == k.victim {
			continue
		}
		if r.Failed() {
			t.Errorf("rank %d: exit %d:\n%s", r.Rank, r.ExitCode, r.Output)
			continue
		}
		at, ok := stamp(r.Output, "DETECTED")
		if !ok {
			t.Errorf("rank %d printed no detection time:\n%s", r.Rank, r.Output)
			continue
		}
		worst = max(worst, time.Duration(at-killed))
	}
	t.Logf("slowest survivor failed %v after the kill", worst)
	if worst > time.Second {
		t.Errorf("survivors took %v to fail, want < 1s", worst)
	}
}

// abortRank: rank 1 aborts from another goroutine while its call waits
// for rank 0; the call returns ErrAborted with the cause, promptly, and
// so does its next; rank 0's next call fails naming rank 1 and the cause.
func abortRank(r *Rank, c *detcoll.Comm, m check.Memory) error {
	cause := errors.New("the user gave up")
	if r.Rank == 1 {
		time.AfterFunc(100*time.Millisecond, func() { c.Abort(cause) })
		start := time.Now()
		_, err := allReduce(16, f32)(c, m)
		if !errors.Is(err, detcoll.ErrAborted) || !errors.Is(err, cause) {
			return fmt.Errorf("aborted call: got %v, want ErrAborted wrapping the cause", err)
		}
		took := time.Since(start)
		if took > time.Second {
			return fmt.Errorf("aborted call returned after %v", took)
		}
		if err := c.Barrier(); !errors.Is(err, detcoll.ErrAborted) {
			return fmt.Errorf("call after Abort: got %v, want ErrAborted", err)
		}
		fmt.Printf("rank 1: the aborted call returned after %v: %v\n", took.Round(time.Millisecond), err)
		return nil
	}
	time.Sleep(400 * time.Millisecond)
	_, err := allReduce(16, f32)(c, m)
	var re *detcoll.RankError
	if !errors.As(err, &re) || re.Rank != 1 || !strings.Contains(err.Error(), cause.Error()) {
		return fmt.Errorf("got %v, want a *RankError naming rank 1 and the cause", err)
	}
	fmt.Printf("rank 0: %v\n", err)
	return nil
}
