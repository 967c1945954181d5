package cpu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
)

// echoRendezvous is rank 1's view of a job in which rank 2 dies right after
// every rank created its segment, and rank 0, told first, removes every
// segment name as it leaves: rank 1 finds the names gone before the
// notice of rank 2's death reaches it.
type echoRendezvous struct {
	memRendezvous
	dir string
}

func (r echoRendezvous) Barrier(ctx context.Context, name string) error {
	err := r.memRendezvous.Barrier(ctx, name)
	if err != nil || name != "cpu/created" {
		return err
	}
	files, _ := filepath.Glob(filepath.Join(r.dir, "*"))
	for _, f := range files {
		os.Remove(f)
	}
	time.AfterFunc(20*time.Millisecond, func() {
		memRendezvous{r.job, 2}.Fail(base.Failure{Kind: base.FailureLost, Culprit: 2, Text: "killed"}.Encode())
	})
	return nil
}

// TestOpenReportsTheCauseNotItsEcho: a segment removed by a peer leaving a
// failed job is an echo of that failure. Open must report the failure
// (rank 2 lost), not blame itself for the missing file (seen: 1 kill in
// 80 during Open at W=4, "peer lost: rank 2: map rank 0's segment: no
// such file or directory" on rank 2, which was healthy).
func TestOpenReportsTheCauseNotItsEcho(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DETCOLL_SHM_DIR", dir)
	job := newMemJob(3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Go(func() {
			var rdv base.Rendezvous = memRendezvous{job, r}
			if r == 1 {
				rdv = echoRendezvous{memRendezvous{job, r}, dir}
			}
			c, err := Open(context.Background(), Config{Rank: r, World: 3, Capacity: 1 << 16, Timeout: 10 * time.Second, Rendezvous: rdv})
			if err == nil {
				c.Close(context.Background())
			}
			errs[r] = err
		})
	}
	wg.Wait()
	var re *base.RankError
	if err := errs[1]; !errors.As(err, &re) || re.Rank != 2 || !errors.Is(err, base.ErrPeerLost) {
		t.Errorf("rank 1's Open = %v; want rank 2 lost", err)
	}
}
