package detcoll_test

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

// TestResolveReadsTheLauncher: Resolve fills what Open would from
// torchrun's variables and gives the local ranks; without a launcher, one
// rank and no local ranks.
func TestResolveReadsTheLauncher(t *testing.T) {
	for _, k := range []string{"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
		"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "DETCOLL_ADDR", "DETCOLL_SECRET"} {
		t.Setenv(k, "")
	}
	o, local, err := detcoll.Options{}.Resolve()
	if err != nil || o.WorldSize != 1 || o.Rank != 0 || local.WorldSize != 0 || local.Rank != -1 || o.Backend != "cpu" ||
		o.Timeout != detcoll.DefaultTimeout || o.Capacity != detcoll.DefaultCapacity {
		t.Fatalf("no launcher: %+v, %+v, %v", o, local, err)
	}
	t.Setenv("RANK", "5")
	t.Setenv("WORLD_SIZE", "8")
	t.Setenv("LOCAL_RANK", "1")
	t.Setenv("LOCAL_WORLD_SIZE", "4")
	t.Setenv("MASTER_ADDR", "10.0.0.1")
	t.Setenv("MASTER_PORT", "29500")
	t.Setenv("DETCOLL_SECRET", "s")
	o, local, err = detcoll.Options{Backend: "cuda"}.Resolve()
	if err != nil || o.WorldSize != 8 || o.Rank != 5 || o.Addr != "10.0.0.1:29500" || o.Secret != "s" || o.Device != 1 ||
		local != (detcoll.LocalRanks{WorldSize: 4, Rank: 1}) || o.Backend != "cuda" {
		t.Fatalf("torchrun: %+v, %+v, %v", o, local, err)
	}
	o, local, err = detcoll.Options{WorldSize: 2, Rank: 1, Device: 3}.Resolve()
	if err != nil || o.WorldSize != 2 || o.Device != 3 || local.Rank != -1 {
		t.Fatalf("set by hand: %+v, %+v, %v", o, local, err)
	}
}

// TestJobFailureReachesEveryRank: two ranks join a job, exchange, and
// one leaves with a cause: the other's Done closes and Err names it with
// that cause, as Open's failures do.
func TestJobFailureReachesEveryRank(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var jobs [2]*detcoll.Job
	var errs [2]error
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for r := range jobs {
		wg.Go(func() {
			jobs[r], errs[r] = detcoll.JoinJob(ctx, detcoll.Options{WorldSize: 2, Rank: r, Addr: addr, Secret: "job secret"})
			if errs[r] != nil {
				return
			}
			all, err := jobs[r].AllGather(ctx, "who", []byte{byte(r)})
			if err == nil && (len(all) != 2 || all[0][0] != 0 || all[1][0] != 1) {
				err = errors.New("wrong values")
			}
			errs[r] = err
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	cause := errors.New("out of device memory")
	wg.Go(func() {
		if err := jobs[1].Leave(ctx, cause); !strings.Contains(err.Error(), "out of device memory") {
			t.Errorf("rank 1's Leave = %v; want its cause", err)
		}
	})
	select {
	case <-jobs[0].Done():
	case <-time.After(5 * time.Second):
		t.Fatal("rank 0 never heard of rank 1's failure")
	}
	var re *detcoll.RankError
	if err := jobs[0].Err(); !errors.As(err, &re) || re.Rank != 1 || !strings.Contains(err.Error(), "out of device memory") {
		t.Errorf("rank 0's Err = %v; want a *RankError naming rank 1 with its cause", err)
	}
	if err := jobs[0].Leave(ctx, nil); err != nil && !errors.Is(err, detcoll.ErrPeerLost) {
		t.Logf("rank 0's Leave: %v", err)
	}
	wg.Wait()
}
