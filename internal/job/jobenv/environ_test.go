package jobenv

import (
	"slices"
	"strings"
	"testing"
)

// pairs splits "NAME=value" entries into the arguments of getenvOf.
func pairs(env []string) []string {
	var kv []string
	for _, e := range env {
		name, value, _ := strings.Cut(e, "=")
		kv = append(kv, name, value)
	}
	return kv
}

func TestEnviron(t *testing.T) {
	for _, tc := range []struct {
		job  Job
		want []string
	}{
		{Job{Rank: 1, World: 3, LocalRank: 1, LocalWorld: 3, Addr: "127.0.0.1:4000", Secret: "s"},
			[]string{"RANK=1", "WORLD_SIZE=3", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=3", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=4000", "DETCOLL_SECRET=s"}},
		{Job{Rank: 0, World: 2, LocalRank: 0, LocalWorld: 1, Addr: "[::1]:7"},
			[]string{"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1", "MASTER_ADDR=::1", "MASTER_PORT=7"}},
		{Job{Rank: 2, World: 4, LocalRank: 0, LocalWorld: 2},
			[]string{"RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2"}},
	} {
		got := tc.job.Environ()
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v.Environ() = %q; want %q", tc.job, got, tc.want)
		}
		back, found, err := FromEnv(getenvOf(pairs(got)...))
		want := tc.job
		want.Source = SourceEnv
		if err != nil || !found || back != want {
			t.Errorf("FromEnv(%q) = %+v, %v, %v; want %+v", got, back, found, err, want)
		}
	}
}

func TestStrip(t *testing.T) {
	env := []string{"PATH=/bin", "RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=h",
		"MASTER_PORT=1", "DETCOLL_ADDR=h:1", "DETCOLL_SECRET=s", "OMPI_COMM_WORLD_RANK=1", "PMIX_NAMESPACE=x",
		"SLURM_PROCID=0", "TORCHELASTIC_RUN_ID=r", "HOME=/root", "DETCOLL_SHM_DIR=/dev/shm", "RANKS=3"}
	got := Strip(env)
	want := []string{"PATH=/bin", "HOME=/root", "DETCOLL_SHM_DIR=/dev/shm", "RANKS=3"}
	if !slices.Equal(got, want) {
		t.Errorf("Strip = %q; want %q", got, want)
	}
	if _, found, err := FromEnv(getenvOf(pairs(got)...)); found || err != nil {
		t.Errorf("FromEnv after Strip = %v, %v; want no job", found, err)
	}
}
