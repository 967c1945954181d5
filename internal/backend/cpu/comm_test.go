package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/tree"
)

// These tests run every rank of a job as a goroutine of one process, with
// an in-memory rendezvous: unlike the multi-process tests in the root
// package, the race detector then sees both sides of the shared memory, so
// it checks that the protocol's atomics order every staging access.

// memRendezvous is a base.Rendezvous for ranks in one process.
type memRendezvous struct {
	job  *memJob
	rank int
}

type memJob struct {
	world int
	mu    sync.Mutex
	vals  map[string][][]byte
	done  chan struct{}
	cause error
	cond  *sync.Cond
}

func newMemJob(world int) *memJob {
	j := &memJob{world: world, vals: map[string][][]byte{}, done: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	return j
}

func (r memRendezvous) AllGather(ctx context.Context, name string, v []byte) ([][]byte, error) {
	j := r.job
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.vals[name] == nil {
		j.vals[name] = make([][]byte, j.world)
	}
	j.vals[name][r.rank] = append([]byte{}, v...)
	j.cond.Broadcast()
	for {
		if j.cause != nil {
			return nil, j.cause
		}
		all := j.vals[name]
		n := 0
		for _, x := range all {
			if x != nil {
				n++
			}
		}
		if n == j.world {
			return all, nil
		}
		j.cond.Wait()
	}
}

func (r memRendezvous) Barrier(ctx context.Context, name string) error {
	_, err := r.AllGather(ctx, name, []byte{1})
	return err
}

func (r memRendezvous) Fail(reason string) {
	j := r.job
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cause == nil {
		if f, ok := base.DecodeFailure(reason); ok {
			j.cause = f.Err()
		} else {
			j.cause = &base.RankError{Rank: r.rank, Reason: reason, Err: base.ErrPeerLost}
		}
		close(j.done)
		j.cond.Broadcast()
	}
}

func (r memRendezvous) Done() <-chan struct{} { return r.job.done }

func (r memRendezvous) Err() error {
	r.job.mu.Lock()
	defer r.job.mu.Unlock()
	return r.job.cause
}

// openJob opens world communicators in goroutines, as the ranks of a job.
func openJob(t *testing.T, world int, timeout time.Duration) []*Comm {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("DETCOLL_SHM_DIR", dir)
	job := newMemJob(world)
	comms := make([]*Comm, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		wg.Go(func() {
			comms[r], errs[r] = Open(context.Background(), Config{
				Rank: r, World: world, Capacity: 1 << 20, Timeout: timeout, Rendezvous: memRendezvous{job, r},
			})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("open rank %d: %v", r, err)
		}
	}
	// Every segment is unlinked as soon as every rank has mapped it.
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d segment files left after Open: %v", len(left), left)
	}
	t.Cleanup(func() {
		// Close is collective: every rank closes at once.
		for r, err := range each(comms, func(c *Comm) error { return c.Close(context.Background()) }) {
			if err != nil && comms[r].Err() == nil {
				t.Errorf("close rank %d: %v", r, err)
			}
		}
	})
	return comms
}

// each runs f on every rank concurrently and returns the errors by rank.
func each(comms []*Comm, f func(c *Comm) error) []error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() { errs[r] = f(c) })
	}
	wg.Wait()
	return errs
}

func f32bytes(s []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s))
}

// TestInProcessAllReduce runs many all-reduces of both paths (one-shot and
// reduce-scatter + all-gather) back to back and compares each with the
// tree evaluated element by element.
func TestInProcessAllReduce(t *testing.T) {
	for _, world := range []int{2, 3} {
		t.Run(fmt.Sprint("W=", world), func(t *testing.T) {
			comms := openJob(t, world, 20*time.Second)
			for call, n := range []int{1, 63, 64, 65, 1000, 4097, 30000, 3, 30001} {
				ins := make([][]float32, world)
				for r := range ins {
					ins[r] = make([]float32, n)
					for i := range ins[r] {
						ins[r][i] = float32(math.Sin(float64(call*7+r*131+i))) * float32(1+r)
					}
				}
				want := make([]float32, n)
				leaves := make([]float32, world)
				for i := range want {
					for r := range leaves {
						leaves[r] = ins[r][i]
					}
					want[i] = tree.Eval(leaves, num.AddFloat32)
				}
				outs := make([][]float32, world)
				errs := each(comms, func(c *Comm) error {
					outs[c.rank] = make([]float32, n)
					return c.Do(&base.Request{Op: base.OpAllReduce, DType: num.Float32Type,
						In: [][]byte{f32bytes(ins[c.rank])}, Out: [][]byte{f32bytes(outs[c.rank])}})
				})
				for r, err := range errs {
					if err != nil {
						t.Fatalf("n=%d rank %d: %v", n, r, err)
					}
					for i := range want {
						if math.Float32bits(outs[r][i]) != math.Float32bits(want[i]) {
							t.Fatalf("n=%d rank %d element %d: got %v, want %v", n, r, i, outs[r][i], want[i])
						}
					}
				}
			}
		})
	}
}

// TestInProcessMismatchAndAbort: a mismatch fails every rank with the
// signatures; on a fresh job, an abort on one rank ends the others' waits.
func TestInProcessMismatchAndAbort(t *testing.T) {
	comms := openJob(t, 2, 20*time.Second)
	errs := each(comms, func(c *Comm) error {
		op := base.OpBarrier
		if c.rank == 1 {
			op = base.OpAllReduce
			b := make([]byte, 8)
			return c.Do(&base.Request{Op: op, DType: num.Float32Type, In: [][]byte{b}, Out: [][]byte{b}})
		}
		return c.Do(&base.Request{Op: op})
	})
	for r, err := range errs {
		var me *base.MismatchError
		if !errors.As(err, &me) || len(me.Signatures) != 2 {
			t.Errorf("rank %d: got %v, want a *MismatchError with 2 signatures", r, err)
		}
	}

	comms = openJob(t, 2, 20*time.Second)
	cause := errors.New("stop")
	start := time.Now()
	errs = each(comms, func(c *Comm) error {
		if c.rank == 1 {
			time.Sleep(50 * time.Millisecond)
			c.Abort(cause)
			return nil
		}
		return c.Do(&base.Request{Op: base.OpBarrier})
	})
	var re *base.RankError
	if !errors.As(errs[0], &re) || re.Rank != 1 {
		t.Errorf("rank 0: got %v, want a *RankError naming rank 1", errs[0])
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("rank 0 noticed the abort after %v", took)
	}
}
