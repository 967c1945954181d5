package cuda_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/conformance"
)

// fourCommsCase: four communicators of two ranks each, every one on a
// non-blocking stream of its own, queue 3 rounds of 16 calls each as fast
// as they can (LL, staging and push paths), with nothing ordering the
// streams: eight of detcoll's kernels on one GPU, each waiting for a
// peer's (issue 22: with launches of half the GPU each, the third kernel
// to arrive found no room and the calls timed out). Every output is
// checked against the reference after the last round.
//
// Both ranks queue the communicators' calls in the same order, as NCCL
// requires of its users too: a process's streams share a few hardware
// queues (CUDA_DEVICE_MAX_CONNECTIONS), where a call that waits for its
// stream's last one also holds back the calls of other streams queued
// behind it. Queued in opposite orders on two ranks, four communicators'
// calls deadlocked that way in run 4 (two communicators, TwoComms, still
// do it with a pause between them).
var fourCommsCase = conformance.Case{Name: "DeviceFourComms", DeviceWorlds: []int{2}, Limit: 4 * time.Minute,
	Capacity: 32 << 20, Timeout: time.Minute, Rank: fourCommsRank}

func TestDeviceFourCommsGPU(t *testing.T) { conformance.RunCase(t, backend, &fourCommsCase) }

func fourCommsRank(r *conformance.Rank) error {
	const comms, rounds = 4, 3
	ctx := context.Background()
	flags := make([]driver.StreamFlags, comms)
	for i := range flags {
		flags[i] = driver.StreamNonBlocking
	}
	g, err := openRank(r, flags...)
	if err != nil {
		return err
	}
	defer g.close()
	cs := []*detcoll.Comm{g.c}
	for len(cs) < comms {
		o := g.c.Options()
		if o.Addr, err = secondAddr(g.c, g.mem); err != nil {
			return err
		}
		c, err := detcoll.Open(ctx, o)
		if err != nil {
			return fmt.Errorf("open communicator %d: %w", len(cs), err)
		}
		defer c.Close(ctx)
		cs = append(cs, c)
	}
	w, rank := r.World, r.Rank
	ops := make([][]*graphOp, comms)
	wants := make([][][]byte, comms)
	for i := range cs {
		if ops[i], err = graphOps(g.mem, w); err != nil {
			return err
		}
		for k, op := range ops[i] {
			want, err := op.inputs(w, rank, 100*i+k)
			if err != nil {
				return err
			}
			wants[i] = append(wants[i], want)
		}
	}
	// The inputs went in on the legacy stream, which the non-blocking
	// streams do not wait for.
	if err := driver.Stream(0).Synchronize(); err != nil {
		return err
	}
	start := time.Now()
	for round := range rounds {
		for k := range 16 {
			for i := range comms {
				if err := ops[i][k].enqueue(cs[i], detcoll.Stream(g.streams[i])); err != nil {
					return fmt.Errorf("round %d, call %d of communicator %d: %w", round, k, i, err)
				}
			}
		}
	}
	for i, c := range cs {
		if err := c.Synchronize(detcoll.Stream(g.streams[i])); err != nil {
			return fmt.Errorf("communicator %d: %w", i, err)
		}
	}
	took := time.Since(start)
	for i := range cs {
		for k, op := range ops[i] {
			if err := check.Expect(op.dt, op.out, wants[i][k]); err != nil {
				return fmt.Errorf("communicator %d, call %d (%s %v n=%d): %w", i, k, op.kind, op.dt, op.n, err)
			}
		}
	}
	fmt.Printf("rank %d: %d communicators on %d unordered streams, %d calls each in %v, checked\n",
		rank, comms, comms, rounds*16, took.Round(time.Millisecond))
	for _, c := range cs[1:] {
		if err := c.Close(ctx); err != nil {
			return err
		}
	}
	return g.c.Close(ctx)
}
