//go:build mpi && cgo

package mpi_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/mpiref"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/mpi"
)

// The ranks are this test binary started by mpirun with DETCOLL_VIRTUAL_HOSTS
// splitting them into hosts: the hosts' traffic really goes through Open
// MPI, the ranks of a host through the cpu backend's shared memory.

const childVar = "DETCOLL_MPI_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childVar) != "" {
		if v := os.Getenv(killVar); v != "" {
			victim, _ := strconv.Atoi(v)
			fmt.Fprintf(os.Stderr, "rank %s: %v\n", os.Getenv("OMPI_COMM_WORLD_RANK"), killChild(victim))
			os.Exit(1)
		}
		err := child()
		if ferr := mpi.Finalize(); err == nil {
			err = ferr
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "rank %s: FAIL: %v\n", os.Getenv("OMPI_COMM_WORLD_RANK"), err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestAcrossHosts runs mpirun for each layout (hosts x ranks per host); every
// rank checks every collective against the flat reference tree over all
// ranks and against one host of all ranks.
func TestAcrossHosts(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	for _, l := range []struct{ hosts, perHost int }{{2, 2}, {2, 4}, {4, 2}, {3, 2}, {1, 4}} {
		t.Run(fmt.Sprintf("%dx%d", l.hosts, l.perHost), func(t *testing.T) {
			w := l.hosts * l.perHost
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			env := append(os.Environ(), childVar+"=1", fmt.Sprintf("%s=%d", mpi.EnvVirtualHosts, l.hosts),
				"DETCOLL_SHM_DIR="+t.TempDir())
			cmd, err := mpiref.Command(ctx, w, exe, []string{"-test.run=^$"}, env)
			if err != nil {
				t.Skip(err)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("mpirun -n %d (%d hosts): %v\n%s", w, l.hosts, err, out)
			}
			if got := strings.Count(string(out), "checked"); got != w {
				t.Errorf("%d of %d ranks reported:\n%s", got, w, out)
			}
			t.Logf("%s", strings.TrimSpace(string(out)))
		})
	}
}

// child is one rank: open across the hosts and on one host, then every
// collective on both, against the reference.
func child() error {
	ctx := context.Background()
	o, err := mpi.Options(detcoll.Options{Capacity: 1 << 20, Timeout: time.Minute})
	if err != nil {
		return err
	}
	multi, err := detcoll.Open(ctx, o)
	if err != nil {
		return fmt.Errorf("open across %d hosts: %w", o.Hosts, err)
	}
	defer multi.Close(ctx)
	rdv, err := mpi.WorldRendezvous()
	if err != nil {
		return err
	}
	one, err := detcoll.Open(ctx, detcoll.Options{WorldSize: o.WorldSize, Rank: o.Rank, Rendezvous: rdv, Capacity: 1 << 20, Timeout: time.Minute})
	if err != nil {
		return fmt.Errorf("open on one host: %w", err)
	}
	defer one.Close(ctx)
	rank, w := o.Rank, o.WorldSize
	checks := 0
	for call, dt := range []detcoll.DType{detcoll.TypeBFloat16, detcoll.TypeFloat16, detcoll.TypeFloat32, detcoll.TypeFloat64} {
		for _, n := range []int{1, 7, 1000, 4097} {
			ins := make([][]byte, w)
			for r := range ins {
				ins[r] = check.Input(9, 100*call+n, r, n, dt)
			}
			want := check.ReferenceSum(dt, ins)
			got, got1 := make([]byte, len(want)), make([]byte, len(want))
			if err := check.AllReduce(multi, dt, ins[rank], got); err != nil {
				return fmt.Errorf("AllReduce %v n=%d: %w", dt, n, err)
			}
			if err := check.AllReduce(one, dt, ins[rank], got1); err != nil {
				return fmt.Errorf("AllReduce on one host %v n=%d: %w", dt, n, err)
			}
			if err := check.FirstDiff(dt, got, want); err != nil {
				return fmt.Errorf("AllReduce %v n=%d against the flat tree: %w", dt, n, err)
			}
			if !bytes.Equal(got, got1) {
				return fmt.Errorf("AllReduce %v n=%d: %d hosts and one host differ", dt, n, o.Hosts)
			}
			big := make([][]byte, w)
			for r := range big {
				big[r] = check.Input(10, 100*call+n, r, n*w, dt)
			}
			wantBig := check.ReferenceSum(dt, big)
			m := n * dt.Size()
			shard := make([]byte, m)
			if err := check.ReduceScatter(multi, dt, big[rank], shard); err != nil {
				return fmt.Errorf("ReduceScatter %v n=%d: %w", dt, n, err)
			}
			if err := check.FirstDiff(dt, shard, wantBig[rank*m:(rank+1)*m]); err != nil {
				return fmt.Errorf("ReduceScatter %v n=%d: %w", dt, n, err)
			}
			checks += 3
		}
	}
	for _, n := range []int{1, 13, 1000} {
		var want []byte
		ins := make([][]byte, w)
		for r := range ins {
			ins[r] = check.Input(11, n, r, n, detcoll.TypeUint8)
			want = append(want, ins[r]...)
		}
		got := make([]byte, w*n)
		if err := detcoll.AllGather(multi, ins[rank], got); err != nil {
			return fmt.Errorf("AllGather n=%d: %w", n, err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("AllGather n=%d differs", n)
		}
		for root := range w {
			buf := append([]byte{}, ins[rank]...)
			if err := detcoll.Broadcast(multi, buf, root); err != nil {
				return fmt.Errorf("Broadcast from %d: %w", root, err)
			}
			if !bytes.Equal(buf, ins[root]) {
				return fmt.Errorf("Broadcast n=%d from %d differs", n, root)
			}
		}
		checks += 1 + w
	}
	if err := multi.Barrier(); err != nil {
		return err
	}
	fmt.Printf("rank %s of %d (%d hosts): %d collectives checked\n", strconv.Itoa(rank), w, o.Hosts, checks)
	return nil
}
