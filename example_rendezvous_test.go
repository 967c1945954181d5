package detcoll_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/detcoll/detcoll"
)

// memRendezvous is a Rendezvous for ranks that are goroutines of one
// process; a real one would ride on an MPI or NCCL communicator.
type memRendezvous struct {
	mu     sync.Mutex
	cond   *sync.Cond
	world  int
	rounds map[string][][]byte
	seen   map[string]int
}

func newMemRendezvous(world int) *memRendezvous {
	r := &memRendezvous{world: world, rounds: map[string][][]byte{}, seen: map[string]int{}}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// forRank is rank's view: AllGather needs to know who publishes.
func (r *memRendezvous) forRank(rank int) detcoll.Rendezvous { return rankRendezvous{r, rank} }

type rankRendezvous struct {
	r    *memRendezvous
	rank int
}

func (v rankRendezvous) AllGather(ctx context.Context, name string, value []byte) ([][]byte, error) {
	r := v.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rounds[name] == nil {
		r.rounds[name] = make([][]byte, r.world)
	}
	r.rounds[name][v.rank] = append([]byte{}, value...)
	r.seen[name]++
	r.cond.Broadcast()
	for r.seen[name] < r.world {
		r.cond.Wait()
	}
	return r.rounds[name], nil
}

// Ranks that can already talk to each other open a communicator over their
// own channel instead of detcoll's store: here three goroutines of one
// process, on the cpu backend.
func ExampleOptions_rendezvous() {
	const world = 3
	rdv := newMemRendezvous(world)
	sums := make([][]float64, world)
	var wg sync.WaitGroup
	for rank := range world {
		wg.Go(func() {
			ctx := context.Background()
			c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: world, Rank: rank, Rendezvous: rdv.forRank(rank)})
			if err != nil {
				log.Fatal(err)
			}
			defer c.Close(ctx)
			in := []float64{1, float64(rank)}
			sums[rank] = make([]float64, len(in))
			if err := detcoll.AllReduce(c, in, sums[rank]); err != nil {
				log.Fatal(err)
			}
		})
	}
	wg.Wait()
	fmt.Println(sums)
	// Output: [[3 3] [3 3] [3 3]]
}
