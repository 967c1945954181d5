package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// The cases of Open, Close and a rebuilt communicator. They call the host
// API, so they run on host backends only.

func hostFailureCases() []Case {
	return []Case{
		{Name: "CloseIsAcknowledged", Worlds: []int{3}, Limit: time.Minute, Rank: closeRank},
		{Name: "KillDuringOpenLeavesNothing", Worlds: []int{3}, Limit: time.Minute, Timeout: 20 * time.Second,
			Rank: killOpenRank, Check: killOpenCheck},
		{Name: "PeerDiesDuringClose", Worlds: []int{2}, Limit: time.Minute, Timeout: 20 * time.Second,
			Rank: killCloseRank, Check: killCloseCheck},
		{Name: "CloseHonoursContext", Worlds: []int{2}, Limit: time.Minute, Timeout: 20 * time.Second, Rank: closeCtxRank},
		{Name: "NewCommunicatorAfterFailure", Worlds: []int{2}, Limit: time.Minute, Timeout: 20 * time.Second, Rank: reopenRank},
	}
}

// closeRank: Close waits for every peer's Close (the last rank is late),
// is idempotent, and every call after it fails with ErrClosed.
func closeRank(r *Rank) error {
	ctx := context.Background()
	c, err := r.Open(ctx)
	if err != nil {
		return err
	}
	if err := detcoll.AllReduce(c, make([]float32, 8), make([]float32, 8)); err != nil {
		return err
	}
	const late = 500 * time.Millisecond
	last := r.Rank == r.World-1
	if last {
		time.Sleep(late)
	}
	start := time.Now()
	if err := c.Close(ctx); err != nil {
		return fmt.Errorf("Close: %w", err)
	}
	if took := time.Since(start); !last && took < late*8/10 {
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

// killOpenRank: ranks 0 and 1 are killed while Open waits for the late
// rank 2, whose Open then fails. Nothing may be left in /dev/shm (which
// ranktest checks).
func killOpenRank(r *Rank) error {
	ctx := context.Background()
	if r.Rank == 2 {
		time.Sleep(time.Second)
		o := r.Options()
		o.Timeout = 3 * time.Second
		if _, err := detcoll.Open(ctx, o); err == nil {
			return fmt.Errorf("Open succeeded without ranks 0 and 1")
		}
		return nil
	}
	time.AfterFunc(300*time.Millisecond, func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
	if _, err := r.Open(ctx); !errors.Is(err, detcoll.ErrPeerLost) {
		return fmt.Errorf("Open returned %v before the rank was killed", err)
	}
	time.Sleep(time.Second) // rank 0 died first: wait for our own kill
	return errors.New("not killed")
}

func killOpenCheck(t *testing.T, world int, res []ranktest.Result) {
	for _, r := range res[:2] {
		if r.Signal != syscall.SIGKILL {
			t.Errorf("rank %d was to be killed: %+v", r.Rank, r)
		}
	}
	if res[2].Failed() {
		t.Errorf("rank 2: %s", res[2].Output)
	}
}

// killCloseRank: rank 1 dies instead of closing; rank 0's Close fails
// promptly, naming it, instead of waiting out its timeout.
func killCloseRank(r *Rank) error {
	ctx := context.Background()
	c, err := r.Open(ctx)
	if err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if r.Rank == 1 {
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

func killCloseCheck(t *testing.T, world int, res []ranktest.Result) {
	if res[1].Signal != syscall.SIGKILL {
		t.Errorf("rank 1 was to be killed: %+v", res[1])
	}
	if res[0].Failed() {
		t.Errorf("rank 0: %s", res[0].Output)
	}
}

// closeCtxRank: rank 1 is slow to close; rank 0's Close gives up when its
// ctx ends, with ctx's error, and still releases everything.
func closeCtxRank(r *Rank) error {
	ctx := context.Background()
	c, err := r.Open(ctx)
	if err != nil {
		return err
	}
	if r.Rank == 1 {
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

// reopenRank: a communicator fails (mismatch); after Close a new one on
// the same job works.
func reopenRank(r *Rank) error {
	ctx := context.Background()
	c, err := r.Open(ctx)
	if err != nil {
		return err
	}
	if r.Rank == 0 {
		err = c.Barrier()
	} else {
		err = detcoll.AllReduce(c, make([]float32, 8), make([]float32, 8))
	}
	if !errors.Is(err, detcoll.ErrMismatch) {
		return fmt.Errorf("first communicator: got %v, want ErrMismatch", err)
	}
	c.Close(ctx)
	c2, err := r.Open(ctx)
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
