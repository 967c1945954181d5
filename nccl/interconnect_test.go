package nccl

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
)

// These tests run the Interconnect's failure logic and its view of the
// store without NCCL or a GPU: a real store of two ranks (two hosts of one
// rank) in this process, and an Interconnect whose NCCL communicators are
// none (aborting them fails harmlessly: NCCL is not loaded).

// twoRanks joins two ranks to a job (rank 0 hosting its store, as
// detcoll.JoinJob does); ms[r] is rank r's.
func twoRanks(t *testing.T) [2]*detcoll.Job {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for rank 0's store
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var ms [2]*detcoll.Job
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range ms {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ms[r], errs[r] = detcoll.JoinJob(ctx, detcoll.Options{WorldSize: 2, Rank: r, Addr: addr, Secret: "test secret"})
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, m := range ms {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				m.Leave(ctx, nil)
			})
		}
		wg.Wait()
	})
	return ms
}

func rail(m *detcoll.Job, host int) *Interconnect {
	return &Interconnect{m: m, hosts: 2, host: host, perHost: 1, timeout: 10 * time.Second,
		done: make(chan struct{}), stop: make(chan struct{})}
}

// TestBlameNamesTheOtherHost: NCCL's error says only that the rail broke;
// when the store says nothing within blameWait, with two hosts the rail's
// other rank is the one named.
func TestBlameNamesTheOtherHost(t *testing.T) {
	ms := twoRanks(t)
	ic := rail(ms[0], 0)
	start := time.Now()
	err := ic.blame(errors.New("ncclInternalError: socket recv failed"))
	var re *detcoll.RankError
	if !errors.As(err, &re) || re.Rank != 1 || !errors.Is(err, detcoll.ErrPeerLost) || !strings.Contains(err.Error(), "socket recv failed") {
		t.Fatalf("blame = %v; want ErrPeerLost naming rank 1 with NCCL's words", err)
	}
	if d := time.Since(start); d < blameWait || d > blameWait+time.Second {
		t.Errorf("blame took %v; want the store's moment, %v", d, blameWait)
	}
}

// TestBlameTakesTheStoresWord: when the store hears of the failure, its
// cause is the one reported, at once.
func TestBlameTakesTheStoresWord(t *testing.T) {
	ms := twoRanks(t)
	ic := rail(ms[0], 0)
	go func() {
		time.Sleep(50 * time.Millisecond)
		ms[1].Fail("rank 1 ran out of memory")
	}()
	start := time.Now()
	err := ic.blame(errors.New("ncclRemoteError"))
	var re *detcoll.RankError
	if !errors.As(err, &re) || re.Rank != 1 || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("blame = %v; want rank 1's own failure", err)
	}
	if d := time.Since(start); d >= blameWait {
		t.Errorf("blame took %v; want it as soon as the store says", d)
	}
}

// TestFailOnce: the first cause stands, Done closes once, and the
// communicators are aborted (here: asked to; NCCL is not loaded) before the
// cause is published, within stopWait.
func TestFailOnce(t *testing.T) {
	ms := twoRanks(t)
	ic := rail(ms[0], 0)
	first := errors.New("first")
	if failed, at := ic.Aborted(); failed || !at.IsZero() {
		t.Fatalf("Aborted before any failure = %v, %v", failed, at)
	}
	before := time.Now()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i == 0 {
				ic.fail(first)
			} else {
				ic.fail(errors.New("later"))
			}
		})
	}
	wg.Wait()
	select {
	case <-ic.Done():
	default:
		t.Fatal("Done is open after fail")
	}
	if err := ic.Err(); err == nil || !ic.freed {
		t.Fatalf("Err = %v, freed = %v; want a cause and the communicators gone", err, ic.freed)
	}
	if failed, at := ic.Aborted(); !failed || at.Before(before) || at.After(time.Now()) {
		t.Errorf("Aborted after the failure = %v, %v; want true and when the aborts returned", failed, at)
	}
	// A rail freed before it failed aborts nothing.
	freed := rail(ms[1], 1)
	freed.free()
	freed.fail(errors.New("after the free"))
	if aborting, at := freed.Aborted(); aborting || !at.IsZero() {
		t.Errorf("Aborted of a rail freed before its failure = %v, %v; want nothing", aborting, at)
	}
	cause := ic.Err()
	if got := ic.fail(errors.New("again")); got != cause {
		t.Errorf("fail after fail = %v; want the first cause %v", got, cause)
	}
	if err := ic.AllGatherDevice(1, 2, 3, 0); err != cause {
		t.Errorf("AllGatherDevice after the failure = %v; want the cause, and no NCCL call", err)
	}
}

// TestHostView: each host's view of the store gathers its own ranks only,
// and a failure anywhere is a failure of every view.
func TestHostView(t *testing.T) {
	ms := twoRanks(t)
	views := [2]detcoll.Rendezvous{rail(ms[0], 0).Host(), rail(ms[1], 1).Host()}
	var got [2][][]byte
	var wg sync.WaitGroup
	for r, v := range views {
		wg.Go(func() {
			var err error
			if got[r], err = v.AllGather(context.Background(), "cuda/ipc", []byte{byte('a' + r)}); err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		})
	}
	wg.Wait()
	for r := range got {
		if len(got[r]) != 1 || string(got[r][0]) != string(rune('a'+r)) {
			t.Errorf("host %d gathered %q; want its own rank's value only", r, got[r])
		}
	}
	fd := views[0].(detcoll.FailureDetector)
	views[1].(detcoll.FailureDetector).Fail("rank 1 gave up")
	select {
	case <-fd.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("host 0's view did not hear of rank 1's failure")
	}
	var re *detcoll.RankError
	if err := fd.Err(); !errors.As(err, &re) || re.Rank != 1 {
		t.Errorf("host 0's view: Err = %v; want rank 1 named", err)
	}
}
