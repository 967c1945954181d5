package detcoll_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/ranktest"
)

func init() {
	roles["mismatch"] = roleMismatch
	roles["skip"] = roleSkip
	roles["kill"] = roleKill
	roles["close"] = roleClose
	roles["reopen"] = roleReopen
	roles["abort"] = roleAbort
	roles["closectx"] = roleCloseCtx
	roles["killopen"] = roleKillOpen
	roles["killclose"] = roleKillClose
}

// roleKillOpen: ranks 0 and 1 are killed while Open waits for the late
// rank 2, whose Open then fails. Nothing may be left in /dev/shm.
func roleKillOpen() error {
	ctx := context.Background()
	rank := envInt("RANK", -1)
	if rank == 2 {
		time.Sleep(time.Second)
		opts := detcoll.Options{Timeout: 3 * time.Second}
		if _, err := detcoll.Open(ctx, opts); err == nil {
			return fmt.Errorf("Open succeeded without ranks 0 and 1")
		}
		return nil
	}
	time.AfterFunc(300*time.Millisecond, func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
	if _, err := openRank(ctx); !errors.Is(err, detcoll.ErrPeerLost) {
		return fmt.Errorf("Open returned %v before the rank was killed", err)
	}
	time.Sleep(time.Second) // rank 0 died first: wait for our own kill
	return errors.New("not killed")
}

// roleKillClose: rank 1 dies instead of closing; rank 0's Close fails
// promptly, naming it, instead of waiting out its timeout.
func roleKillClose() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if c.Rank() == 1 {
		time.Sleep(200 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	start := time.Now()
	err = c.Close(ctx)
	var re *detcoll.RankError
	if !errors.As(err, &re) || re.Rank != 1 {
		return fmt.Errorf("Close with a dying peer: got %v, want a *RankError naming rank 1", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		return fmt.Errorf("Close took %v", took)
	}
	return nil
}

// roleCloseCtx: rank 1 is slow to close; rank 0's Close gives up when its
// ctx ends, with ctx's error, and still releases everything.
func roleCloseCtx() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	if c.Rank() == 1 {
		time.Sleep(2 * time.Second)
		c.Close(ctx) // rank 0 has gone: whatever this says is fine
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = c.Close(cctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("Close with an expiring ctx: got %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > time.Second {
		return fmt.Errorf("Close took %v after its ctx ended", took)
	}
	if err := c.Barrier(); !errors.Is(err, detcoll.ErrClosed) {
		return fmt.Errorf("call after Close: got %v, want ErrClosed", err)
	}
	return nil
}

// roleAbort: rank 1 aborts from another goroutine while its call waits for
// rank 0; the call returns ErrAborted with the cause, and rank 0's next
// call fails naming rank 1 and the cause.
func roleAbort() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	in, out := make([]float32, 16), make([]float32, 16)
	cause := errors.New("the user gave up")
	if c.Rank() == 1 {
		time.AfterFunc(100*time.Millisecond, func() { c.Abort(cause) })
		start := time.Now()
		err := detcoll.AllReduce(c, in, out)
		if !errors.Is(err, detcoll.ErrAborted) || !errors.Is(err, cause) {
			return fmt.Errorf("aborted call: got %v, want ErrAborted wrapping the cause", err)
		}
		if took := time.Since(start); took > time.Second {
			return fmt.Errorf("aborted call returned after %v", took)
		}
		if err := c.Barrier(); !errors.Is(err, detcoll.ErrAborted) {
			return fmt.Errorf("call after Abort: got %v, want ErrAborted", err)
		}
		return nil
	}
	time.Sleep(400 * time.Millisecond)
	err = detcoll.AllReduce(c, in, out)
	var re *detcoll.RankError
	if !errors.As(err, &re) || re.Rank != 1 || !strings.Contains(err.Error(), cause.Error()) {
		return fmt.Errorf("got %v, want a *RankError naming rank 1 and the cause", err)
	}
	return nil
}

// roleMismatch: the last rank calls something else; every rank must fail
// with a *MismatchError listing every rank's signature, then stay failed.
func roleMismatch() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	in := make([]float32, 1000)
	out := make([]float32, 1000)
	odd := rank == w-1
	switch mode := os.Getenv("MISMATCH"); {
	case !odd && mode == "root":
		err = detcoll.Broadcast(c, in, 0)
	case !odd && mode == "layout":
		err = detcoll.AllGatherMany(c, [][]float32{in[:500], in[500:]}, [][]float32{make([]float32, 500*w), make([]float32, 500*w)})
	case !odd:
		err = detcoll.AllReduce(c, in, out)
	case mode == "op":
		err = detcoll.AllGather(c, in, make([]float32, w*len(in)))
	case mode == "dtype":
		err = detcoll.AllReduce(c, make([]float64, 1000), make([]float64, 1000))
	case mode == "count":
		err = detcoll.AllReduce(c, in[:999], out[:999])
	case mode == "op-root":
		err = detcoll.Broadcast(c, in, 0) // the others all-reduce
	case mode == "root":
		err = detcoll.Broadcast(c, in, 1) // the others broadcast from 0
	case mode == "layout":
		err = detcoll.AllGatherMany(c, [][]float32{in[:10], in[10:]}, [][]float32{make([]float32, 10*w), make([]float32, 990*w)})
	default:
		return fmt.Errorf("unknown MISMATCH %q", mode)
	}
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
	fmt.Printf("rank %d: %v\n", rank, err)
	if err2 := detcoll.AllReduce(c, in, out); !errors.Is(err2, detcoll.ErrMismatch) {
		return fmt.Errorf("call after a mismatch: got %v, want the cause again", err2)
	}
	return nil
}

// roleSkip: the last rank skips a call; the others must get a timeout
// naming the operation and the missing rank.
func roleSkip() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	w, rank := c.WorldSize(), c.Rank()
	if rank == w-1 {
		time.Sleep(3 * time.Second)
		// By now the others have timed out waiting for this rank and
		// said so.
		var te *detcoll.TimeoutError
		if err := c.Barrier(); !errors.As(err, &te) || len(te.Missing) != 1 || te.Missing[0] != rank {
			return fmt.Errorf("skipper's next call: got %v, want the others' timeout naming this rank", err)
		}
		return nil
	}
	start := time.Now()
	err = detcoll.AllReduce(c, make([]float32, 10), make([]float32, 10))
	// Either this rank timed out itself, or a faster peer did and told it:
	// both are the same *TimeoutError, naming AllReduce's missing rank.
	var te *detcoll.TimeoutError
	if !errors.As(err, &te) || te.Op.String() != "AllReduce" || len(te.Missing) != 1 || te.Missing[0] != w-1 ||
		!errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("got %v, want a timeout naming AllReduce and rank %d alone", err, w-1)
	}
	fmt.Printf("rank %d: after %v: %v\n", rank, time.Since(start).Round(time.Millisecond), err)
	return nil
}

// roleKill: every rank all-reduces in a loop; the victim kills itself with
// SIGKILL in the middle. The others must fail with a *RankError naming it;
// they print when they noticed, the victim when it died.
func roleKill() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	victim := envInt("VICTIM", 1)
	in := make([]float32, 50000)
	out := make([]float32, len(in))
	for i := 0; ; i++ {
		if c.Rank() == victim && i == 300 {
			fmt.Printf("KILL %d\n", time.Now().UnixNano())
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		n := len(in)
		if i%2 == 0 {
			n = 16 // 64 bytes: alternate the one-shot and the two-phase paths
		}
		if err = detcoll.AllReduce(c, in[:n], out[:n]); err != nil {
			break
		}
	}
	fmt.Printf("DETECTED %d %v\n", time.Now().UnixNano(), err)
	var re *detcoll.RankError
	if !errors.Is(err, detcoll.ErrPeerLost) || !errors.As(err, &re) || re.Rank != victim {
		return fmt.Errorf("got %v, want a *RankError naming rank %d", err, victim)
	}
	return nil
}

// roleClose: Close waits for every peer's Close (the last rank is late),
// is idempotent, and every call after it fails with ErrClosed.
func roleClose() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	if err := detcoll.AllReduce(c, make([]float32, 8), make([]float32, 8)); err != nil {
		return err
	}
	const late = 500 * time.Millisecond
	if c.Rank() == c.WorldSize()-1 {
		time.Sleep(late)
	}
	start := time.Now()
	if err := c.Close(ctx); err != nil {
		return fmt.Errorf("Close: %w", err)
	}
	if took := time.Since(start); c.Rank() != c.WorldSize()-1 && took < late*8/10 {
		return fmt.Errorf("Close returned after %v, before the late peer closed", took)
	}
	if err := c.Close(ctx); err != nil {
		return fmt.Errorf("second Close: %w", err)
	}
	if err := detcoll.AllReduce(c, make([]float32, 8), make([]float32, 8)); !errors.Is(err, detcoll.ErrClosed) {
		return fmt.Errorf("AllReduce after Close: got %v, want ErrClosed", err)
	}
	if err := c.Barrier(); !errors.Is(err, detcoll.ErrClosed) {
		return fmt.Errorf("Barrier after Close: got %v, want ErrClosed", err)
	}
	if _, err := detcoll.Stage[float32](c, 4); !errors.Is(err, detcoll.ErrClosed) {
		return fmt.Errorf("Stage after Close: got %v, want ErrClosed", err)
	}
	return nil
}

// roleReopen: a communicator fails (mismatch); after Close a new one on
// the same job works.
func roleReopen() error {
	ctx := context.Background()
	c, err := openRank(ctx)
	if err != nil {
		return err
	}
	if c.Rank() == 0 {
		err = c.Barrier()
	} else {
		err = detcoll.AllReduce(c, make([]float32, 8), make([]float32, 8))
	}
	if !errors.Is(err, detcoll.ErrMismatch) {
		return fmt.Errorf("first communicator: got %v, want ErrMismatch", err)
	}
	c.Close(ctx)
	c2, err := openRank(ctx)
	if err != nil {
		return fmt.Errorf("second Open: %w", err)
	}
	in := []float32{float32(c2.Rank() + 1)}
	out := make([]float32, 1)
	if err := detcoll.AllReduce(c2, in, out); err != nil {
		return fmt.Errorf("second communicator: %w", err)
	}
	w := c2.WorldSize()
	if want := float32(w * (w + 1) / 2); out[0] != want {
		return fmt.Errorf("second communicator: got %v, want %v", out[0], want)
	}
	return c2.Close(ctx)
}

func TestMismatchFailsEveryRank(t *testing.T) {
	for _, mode := range []string{"op", "dtype", "count", "op-root", "root", "layout"} {
		for _, w := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/W=%d", mode, w), func(t *testing.T) {
				res := ranktest.Run(t, w, "mismatch", time.Minute, "MISMATCH="+mode, "TEST_TIMEOUT_MS=20000")
				ranktest.RequireOK(t, res)
				if !t.Failed() {
					t.Logf("rank 0 said: %s", strings.TrimSpace(res[0].Output))
				}
			})
		}
	}
}

func TestSkippedCallTimesOut(t *testing.T) {
	res := ranktest.Run(t, 3, "skip", time.Minute, "TEST_TIMEOUT_MS=1000")
	ranktest.RequireOK(t, res)
	t.Logf("rank 0 said: %s", strings.TrimSpace(res[0].Output))
}

var timeRE = regexp.MustCompile(`(KILL|DETECTED) (\d+)`)

// TestKilledRankFailsEveryRankPromptly kills a rank with SIGKILL during a
// run of all-reduces and measures how long the others take to fail.
func TestKilledRankFailsEveryRankPromptly(t *testing.T) {
	for _, tc := range []struct{ world, victim int }{{2, 1}, {4, 2}, {4, 0}} {
		t.Run(fmt.Sprintf("W=%d/victim=%d", tc.world, tc.victim), func(t *testing.T) {
			res := ranktest.Run(t, tc.world, "kill", time.Minute, "VICTIM="+strconv.Itoa(tc.victim), "TEST_TIMEOUT_MS=30000")
			var killed int64
			if m := timeRE.FindStringSubmatch(res[tc.victim].Output); m != nil && m[1] == "KILL" {
				killed, _ = strconv.ParseInt(m[2], 10, 64)
			}
			if res[tc.victim].Signal != syscall.SIGKILL || killed == 0 {
				t.Fatalf("victim did not die by SIGKILL as planned: %+v", res[tc.victim])
			}
			var worst time.Duration
			for _, r := range res {
				if r.Rank == tc.victim {
					continue
				}
				if r.Failed() {
					t.Errorf("rank %d: exit %d:\n%s", r.Rank, r.ExitCode, r.Output)
					continue
				}
				m := timeRE.FindStringSubmatch(r.Output)
				if m == nil || m[1] != "DETECTED" {
					t.Errorf("rank %d printed no detection time:\n%s", r.Rank, r.Output)
					continue
				}
				at, _ := strconv.ParseInt(m[2], 10, 64)
				worst = max(worst, time.Duration(at-killed))
			}
			t.Logf("slowest survivor failed %v after the kill", worst)
			if worst > time.Second {
				t.Errorf("survivors took %v to fail, want < 1s", worst)
			}
		})
	}
}

func TestCloseIsAcknowledged(t *testing.T) {
	ranktest.RequireOK(t, ranktest.Run(t, 3, "close", time.Minute))
}

// TestKillDuringOpenLeavesNothing kills ranks while Open waits for a late
// one: no segment may be left behind (ranktest checks the job's shm dir).
func TestKillDuringOpenLeavesNothing(t *testing.T) {
	res := ranktest.Run(t, 3, "killopen", time.Minute, "TEST_TIMEOUT_MS=20000")
	for _, r := range res[:2] {
		if r.Signal != syscall.SIGKILL {
			t.Errorf("rank %d was to be killed: %+v", r.Rank, r)
		}
	}
	if res[2].Failed() {
		t.Errorf("rank 2: %s", res[2].Output)
	}
}

func TestPeerDiesDuringClose(t *testing.T) {
	res := ranktest.Run(t, 2, "killclose", time.Minute, "TEST_TIMEOUT_MS=20000")
	if res[1].Signal != syscall.SIGKILL {
		t.Errorf("rank 1 was to be killed: %+v", res[1])
	}
	if res[0].Failed() {
		t.Errorf("rank 0: %s", res[0].Output)
	}
}

func TestCloseHonoursContext(t *testing.T) {
	ranktest.RequireOK(t, ranktest.Run(t, 2, "closectx", time.Minute, "TEST_TIMEOUT_MS=20000"))
}

func TestAbort(t *testing.T) {
	ranktest.RequireOK(t, ranktest.Run(t, 2, "abort", time.Minute, "TEST_TIMEOUT_MS=20000"))
}

func TestNewCommunicatorAfterFailure(t *testing.T) {
	ranktest.RequireOK(t, ranktest.Run(t, 2, "reopen", time.Minute, "TEST_TIMEOUT_MS=20000"))
}
