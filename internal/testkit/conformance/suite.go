package conformance

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// Backend is a backend under test, as its package's tests describe it.
type Backend struct {
	Name string // Options.Backend
	// Device says the backend's buffers are device memory: its cases run
	// at their DeviceWorlds, not their Worlds.
	Device bool
	// Memory returns the memory rank buffers of c live in; done releases
	// it, after c is closed.
	Memory func(c *detcoll.Comm) (m check.Memory, done func(), err error)
	// Env, when set, ends t where case c cannot run at world ranks here
	// (the GPUs are missing) and returns what the ranks' environment
	// needs besides the job's.
	Env func(t *testing.T, c *Case, world int) []string
	// Capacity is Options.Capacity of the cases that do not set theirs,
	// at world ranks: room for the largest call of the data cases.
	Capacity func(world int) int64
	// Timeout is Options.Timeout of the cases that do not set theirs; 0:
	// the library's default.
	Timeout time.Duration
	// ReduceCounts are element counts of dt that straddle the backend's
	// thresholds at world ranks, with odd tails; short: a few of them.
	ReduceCounts func(dt detcoll.DType, world int, short bool) []int
	// GatherBytes are bytes per rank that straddle the backend's gather
	// thresholds at world ranks.
	GatherBytes func(world int) []int
	// Paths are counts of float32 all-reduces that take each of the
	// backend's paths in turn (cpu: one-shot and two-phase).
	Paths []int
}

// Case is one test of the suite.
type Case struct {
	Name string
	// Worlds are the world sizes on host backends; ShortWorlds, when
	// set, replace them under -short.
	Worlds, ShortWorlds []int
	// DeviceWorlds are the world sizes on device backends; none: the case
	// does not run there.
	DeviceWorlds []int
	// Limit bounds each run of the ranks.
	Limit time.Duration
	// Capacity and Timeout are the ranks' Options.Capacity and
	// Options.Timeout; 0: the backend's.
	Capacity int64
	Timeout  time.Duration
	// Short runs the short sweep (ReduceCounts) even without -short.
	Short bool
	// OwnDevices: every rank needs a device of its own (a timing); else
	// the ranks may share the devices there are.
	OwnDevices bool
	// Parallel runs the case beside the other parallel ones.
	Parallel bool

	// Rank is what each rank does; it returns nil when the rank's checks
	// passed. What it prints reaches Check.
	Rank func(r *Rank) error
	// Check judges the ranks' results at world ranks; nil: every rank
	// must exit 0.
	Check func(t *testing.T, world int, res []ranktest.Result)
}

// worlds returns the world sizes c runs at on b.
func (c *Case) worlds(b *Backend, short bool) []int {
	switch {
	case b.Device:
		return c.DeviceWorlds
	case short && c.ShortWorlds != nil:
		return c.ShortWorlds
	}
	return c.Worlds
}

// Rank is one rank of a case: what its body may use.
type Rank struct {
	Rank, World int
	Short       bool // the short sweep: -short, or Case.Short
	Backend     *Backend
	Case        *Case
}

// Options returns the case's options for this rank's communicator.
func (r *Rank) Options() detcoll.Options {
	o := detcoll.Options{Backend: r.Backend.Name, Capacity: r.Case.Capacity, Timeout: r.Case.Timeout}
	if o.Capacity == 0 && r.Backend.Capacity != nil {
		o.Capacity = r.Backend.Capacity(r.World)
	}
	if o.Timeout == 0 {
		o.Timeout = r.Backend.Timeout
	}
	return o
}

// Open opens the rank's communicator from the job's environment, with
// Options.
func (r *Rank) Open(ctx context.Context) (*detcoll.Comm, error) {
	return detcoll.Open(ctx, r.Options())
}

// OpenMemory opens the rank's communicator and the memory of its
// buffers; done closes both.
func (r *Rank) OpenMemory(ctx context.Context) (c *detcoll.Comm, m check.Memory, done func(), err error) {
	if c, err = r.Open(ctx); err != nil {
		return nil, nil, nil, err
	}
	m, free, err := r.Backend.Memory(c)
	if err != nil {
		c.Close(ctx)
		return nil, nil, nil, err
	}
	return c, m, func() { c.Close(ctx); free() }, nil
}

// withMemory returns a Case.Rank that opens the rank's communicator and
// the memory of its buffers, runs body on them, then closes both (body
// may close the communicator first, to check what Close says).
func withMemory(body func(r *Rank, c *detcoll.Comm, m check.Memory) error) func(*Rank) error {
	return func(r *Rank) error {
		c, m, done, err := r.OpenMemory(context.Background())
		if err != nil {
			return err
		}
		defer done()
		return body(r, c, m)
	}
}

// Run runs cases on b: each case at each of its world sizes, as subtests
// named case/W=world.
func Run(t *testing.T, b Backend, cases []Case) {
	for i := range cases {
		c := &cases[i]
		if len(c.worlds(&b, testing.Short())) == 0 {
			continue
		}
		t.Run(c.Name, func(t *testing.T) { RunCase(t, b, c) })
	}
}

// RunCase runs one case on b in t, at each of its world sizes.
func RunCase(t *testing.T, b Backend, c *Case) {
	if c.Parallel {
		t.Parallel()
	}
	worlds := c.worlds(&b, testing.Short())
	if len(worlds) == 0 {
		t.Skipf("%s does not run on the %s backend", c.Name, b.Name)
	}
	for _, w := range worlds {
		t.Run("W="+strconv.Itoa(w), func(t *testing.T) {
			var env []string
			if b.Env != nil {
				env = b.Env(t, c, w)
			}
			res := ranktest.Run(t, w, c.Name, c.Limit, env...)
			if c.Check != nil {
				c.Check(t, w, res)
				return
			}
			ranktest.RequireOK(t, res)
			if !t.Failed() {
				t.Logf("rank 0 said: %s", strings.TrimSpace(res[0].Output))
			}
		})
	}
}

// Main runs the rank of a case of cases that this process was started
// for, and exits; otherwise it returns. Call it first in TestMain, with
// every case that the package's tests run.
func Main(b Backend, cases []Case) {
	roles := make(map[string]ranktest.Role, len(cases))
	for i := range cases {
		c := &cases[i]
		if _, dup := roles[c.Name]; dup {
			panic("conformance: two cases named " + c.Name)
		}
		roles[c.Name] = func() error { return c.Rank(newRank(&b, c)) }
	}
	ranktest.Main(roles)
}

// newRank describes this process's rank of c, from the job's
// environment that ranktest.Run set.
func newRank(b *Backend, c *Case) *Rank {
	rank, _ := strconv.Atoi(os.Getenv("RANK"))
	world, _ := strconv.Atoi(os.Getenv("WORLD_SIZE"))
	return &Rank{Rank: rank, World: world, Short: testing.Short() || c.Short, Backend: b, Case: c}
}

// Cases returns the suite.
func Cases() []Case {
	return slices.Concat(dataCases(), operatorCases(), failureCases(), storyCases())
}

// Find returns the case of the suite called name.
func Find(name string) Case {
	for _, c := range Cases() {
		if c.Name == name {
			return c
		}
	}
	panic(fmt.Sprintf("conformance: no case %q", name))
}

// HostMemory is Backend.Memory of a backend whose buffers are host memory.
func HostMemory(*detcoll.Comm) (check.Memory, func(), error) { return check.Host{}, func() {}, nil }

// GatherBytes is the reference system's all-gather sweep in bytes per
// rank at world ranks (T = its 64 KiB single-block threshold), which
// straddles 16-byte vectors, odd tails and the cuda backend's 4 KiB LL
// windows; a backend's Backend.GatherBytes adds its own thresholds.
func GatherBytes(world int) []int {
	const t = 64 << 10
	w := world
	return []int{0, 1, 15, 16, 17, 4095, 32<<10 + 3, 96 << 10, t/w - 1, t / w, t/w + 1, t/w + 16, 1<<20 + 5}
}
