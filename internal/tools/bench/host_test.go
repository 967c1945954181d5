package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// roles are the bodies of the ranks that tests start (see ranktest); the
// mpi build adds its own.
var roles = map[string]ranktest.Role{"bench": benchRole}

func TestMain(m *testing.M) {
	ranktest.Main(roles)
	os.Exit(m.Run())
}

// hostConfig measures every operation at small sizes that every world
// size up to 4 divides.
func hostConfig(dt num.DType) Config {
	c := validConfig()
	c.DType = dt
	c.Sizes = []int{12 * dt.Size(), 1200 * dt.Size()}
	c.Warmup, c.Iterations = 1, 2
	return c
}

// runHost runs hostConfig on a communicator opened from the environment
// and checks the report.
func runHost(dt num.DType) (*report.Report, error) {
	return runWith(hostConfig(dt), nil)
}

// runWith runs cfg with detcoll's host side and ref on a communicator
// opened from the environment, and checks the report.
func runWith(cfg Config, ref Impl) (*report.Report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := detcoll.Open(ctx, detcoll.Options{Capacity: cfg.Capacity(), Timeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	rep, err := Measure(cfg, CommGroup(c), NewHost(c), ref, Output{})
	if err != nil {
		c.Abort(err)
		return nil, err
	}
	if want := len(Ops) * len(cfg.Sizes); len(rep.Rows) != want {
		return nil, fmt.Errorf("%d rows; want %d", len(rep.Rows), want)
	}
	if !strings.Contains(rep.Meta.Device, "CPUs)") || !strings.Contains(string(rep.Meta.Options), `"capacity"`) {
		return nil, fmt.Errorf("metadata: device %q, options %s", rep.Meta.Device, rep.Meta.Options)
	}
	for _, r := range rep.Rows {
		if r.DetcollUS <= 0 || (ref != nil) != (r.ReferenceUS > 0) {
			return nil, fmt.Errorf("%s at %d bytes: %v us, reference %v us", r.Operation, r.InputBytesPerRank, r.DetcollUS, r.ReferenceUS)
		}
	}
	return rep, c.Close(ctx)
}

// TestHostOneRank runs the real detcoll side on a single rank, every type.
func TestHostOneRank(t *testing.T) {
	for _, dt := range []num.DType{num.BFloat16Type, num.Float16Type, num.Float32Type, num.Float64Type} {
		if _, err := runHost(dt); err != nil {
			t.Errorf("%v: %v", dt, err)
		}
	}
}

func benchRole() error {
	_, err := runHost(num.BFloat16Type)
	return err
}

// TestHostRanks runs the real detcoll side on 2 and 3 ranks.
func TestHostRanks(t *testing.T) {
	for _, w := range []int{2, 3} {
		if testing.Short() && w > 2 {
			continue
		}
		ranktest.RequireOK(t, ranktest.Run(t, w, "bench", time.Minute))
	}
}
