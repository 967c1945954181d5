package soak

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
)

func testPlanner(seed uint64, world, rank int) *planner {
	return &planner{seed: seed, world: world, rank: rank, maxBytes: DefaultMaxBytes,
		maxDelay: time.Millisecond, delayProb: 0.01, ops: allOps()}
}

// TestPlanDeterministic checks that the sequence depends only on the seed
// (and, for the delays, on the rank): ranks agree without communicating.
func TestPlanDeterministic(t *testing.T) {
	a, b := testPlanner(7, 3, 0), testPlanner(7, 3, 2)
	other := testPlanner(8, 3, 0)
	same := 0
	for i := int64(1); i <= 2000; i++ {
		ca, cb := a.plan(i), b.plan(i)
		if again := a.plan(i); !reflect.DeepEqual(ca, again) {
			t.Fatalf("call %d: drawn twice: %+v, then %+v", i, ca, again)
		}
		ca.Delay, cb.Delay = 0, 0
		if !reflect.DeepEqual(ca, cb) {
			t.Fatalf("call %d: rank 0 drew %+v, rank 2 %+v", i, ca, cb)
		}
		if reflect.DeepEqual(ca, other.plan(i)) {
			same++
		}
	}
	if same > 20 {
		t.Errorf("seeds 7 and 8 drew %d identical calls of 2000", same)
	}
}

// TestPlanCovers checks the bounds of every drawn call and that a few
// thousand calls cover every operation, every element type of each kind,
// one-element calls, calls past the largest threshold, offsets and
// delays.
func TestPlanCovers(t *testing.T) {
	const world = 3
	p := testPlanner(1, world, 1)
	ops := map[Op]bool{}
	types := map[[2]int]bool{} // reduces?, dtype
	var tiny, huge, delays, misaligned, several int
	for i := int64(1); i <= 5000; i++ {
		c := p.plan(i)
		ops[c.Op] = true
		red := 0
		if c.Op.Reduces() {
			red = 1
		}
		types[[2]int{red, int(c.DType)}] = true
		if in := c.InBytes(world); in < c.DType.Size() || in > p.maxBytes {
			t.Fatalf("call %d: %d input bytes; want [%d, %d]: %+v", i, in, c.DType.Size(), p.maxBytes, c)
		}
		if !c.Op.many() && len(c.Counts) != 1 {
			t.Fatalf("call %d: %v with %d buffers", i, c.Op, len(c.Counts))
		}
		for _, k := range c.Counts {
			if k < 1 {
				t.Fatalf("call %d: count %d: %+v", i, k, c)
			}
		}
		if len(c.Counts) > maxParts || c.InOff >= maxOff || c.OutOff >= maxOff || c.Root < 0 || c.Root >= world ||
			c.Delay < 0 || c.Delay >= p.maxDelay {
			t.Fatalf("call %d out of bounds: %+v", i, c)
		}
		if c.Op.Reduces() && !c.DType.Reducible() {
			t.Fatalf("call %d: %v of %v", i, c.Op, c.DType)
		}
		if c.InBytes(world) <= 8*world {
			tiny++
		}
		if c.InBytes(world) > 2<<20 {
			huge++
		}
		if c.Delay > 0 {
			delays++
		}
		if len(c.Counts) > 1 {
			several++
		}
		if c.OutOff*c.DType.Size()%16 != 0 {
			misaligned++
		}
	}
	if len(ops) != int(numOps) {
		t.Errorf("%d operations drawn; want all %d", len(ops), numOps)
	}
	if got, want := len(types), len(reduceTypes)+len(gatherTypes); got != want {
		t.Errorf("%d (kind, element type) pairs drawn; want %d", got, want)
	}
	if tiny == 0 || huge == 0 || delays == 0 || misaligned == 0 || several == 0 {
		t.Errorf("of 5000 calls: %d tiny, %d over 2 MiB, %d delayed, %d misaligned outputs, %d of several buffers; want some of each",
			tiny, huge, delays, misaligned, several)
	}
}

func TestSeg(t *testing.T) {
	pool := []byte("abcdefg")
	s := seg{pool, 5, 10}
	got := make([]byte, 10)
	s.fill(got)
	if string(got) != "fgabcdefga" {
		t.Fatalf("fill = %q; want %q", got, "fgabcdefga")
	}
	if i := s.diff(got); i != -1 {
		t.Errorf("diff of the same = %d; want -1", i)
	}
	got[8] = 'x'
	if i := s.diff(got); i != 8 {
		t.Errorf("diff = %d; want 8", i)
	}
}

// idealExec is a backend that computes every result from the reference
// (the pools) and, like cuda, writes nothing until finish: a check made
// before finish would see guard bytes and fail. spoil, when set, can
// damage a call's result afterwards.
type idealExec struct {
	pl      *pools
	pending []*placed
	spoil   func(b *batch, p *placed)
}

func (e *idealExec) start(*batch) error { return nil }
func (e *idealExec) close()             {}

func (e *idealExec) agree(stop bool) (bool, error) { return stop, nil }

func (e *idealExec) issue(b *batch, p *placed) error {
	e.pending = append(e.pending, p)
	return nil
}

func (e *idealExec) finish(b *batch) error {
	for _, p := range e.pending {
		for k := range p.Counts {
			out := p.outBuf(b.out, k)
			at := 0
			for _, s := range e.pl.want(&p.Call, k, b.rank) {
				s.fill(out[at : at+s.n])
				at += s.n
			}
		}
		if e.spoil != nil {
			e.spoil(b, p)
		}
	}
	e.pending = e.pending[:0]
	return nil
}

// TestLoopPipelined runs the loop on the ideal backend: every call passes
// when its results are only there after finish, as on cuda.
func TestLoopPipelined(t *testing.T) {
	for _, batch := range []int{1, 16} {
		const world, rank = 3, 1
		pl := newPools(5, world)
		cfg := Config{Seed: 5, Calls: 700, Batch: batch, MaxDelay: -1}.withDefaults()
		res := &RankResult{}
		if err := run(context.Background(), world, rank, &idealExec{pl: pl}, cfg, pl, nil, res); err != nil {
			t.Fatal(err)
		}
		// The operations, each reduction's operators apart (its key ends
		// in /avg, /max ...; a sum has none).
		ops, reds := map[string]bool{}, map[string]bool{}
		for k := range res.CallsByOp {
			op := k
			if i := strings.LastIndex(k, "/"); i >= 0 {
				if _, err := num.ParseRedOp(k[i+1:]); err == nil {
					op = k[:i]
					reds[k[i+1:]] = true
				}
			}
			ops[op] = true
		}
		if res.Calls != 700 || res.Failures != 0 || len(ops) != int(numOps) || len(reds) != len(num.RedOps())-1 || res.Checks < 700 {
			t.Errorf("batch %d: %d calls, %d failures %v, %d ops, operators %v, %d checks; want 700 calls, none failed, all ops and operators",
				batch, res.Calls, res.Failures, res.Details, len(ops), reds, res.Checks)
		}
	}
}

// TestCheckerFails proves that the checker can fail: a flipped bit, a
// written guard byte, a changed input and a call that wrote nothing are
// each caught, and named.
func TestCheckerFails(t *testing.T) {
	const world, rank, target = 2, 0, 37
	pl := newPools(3, world)
	tests := []struct {
		name    string
		corrupt int64
		spoil   func(b *batch, p *placed)
		want    string
	}{
		{"flipped bit (CorruptCall)", target, nil, "element 0 "},
		{"guard after the output", 0, func(b *batch, p *placed) {
			if p.Number == target {
				b.out[p.out.off+p.out.n] ^= 0xFF
			}
		}, "output guard"},
		{"guard before the output", 0, func(b *batch, p *placed) {
			if p.Number == target {
				b.out[p.out.off-1] = 0
			}
		}, "output guard"},
		{"output not written", 0, func(b *batch, p *placed) {
			if p.Number == target {
				o := p.outBuf(b.out, len(p.Counts)-1)
				for i := range o {
					o[i] = guardByte
				}
			}
		}, "output"},
		{"input changed", 0, func(b *batch, p *placed) {
			if p.Number == target && p.in.n > 0 {
				b.in[p.in.off+p.in.n-1] ^= 0x10
			}
		}, "input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Seed: 3, Calls: 60, Batch: 8, MaxDelay: -1, CorruptCall: tt.corrupt}.withDefaults()
			p := testPlanner(3, world, rank)
			if tt.name == "input changed" && p.plan(target).Op.inPlace() {
				t.Skipf("call %d has no input buffer", target)
			}
			res := &RankResult{}
			ex := &idealExec{pl: pl, spoil: tt.spoil}
			if err := run(context.Background(), world, rank, ex, cfg, pl, nil, res); err != nil {
				t.Fatal(err)
			}
			if res.Failures != 1 || len(res.Details) != 1 || res.Details[0].Call != target || !strings.Contains(res.Details[0].What, tt.want) {
				t.Fatalf("%d failures %+v; want one, call %d, saying %q", res.Failures, res.Details, target, tt.want)
			}
		})
	}
}

// TestRunOneRank runs RunComm on a real communicator of one rank (cpu), and
// checks that it stops on Duration and that CorruptCall fails it.
func TestRunOneRank(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Seed: 2, Calls: 300, MaxBytes: 1 << 20, CorruptCall: 123}
	c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: 1, Capacity: cfg.Capacity(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	res, err := RunComm(ctx, c, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 300 || res.Failures != 1 || res.Details[0].Call != 123 {
		t.Errorf("%d calls, %d failures %+v; want 300 calls, call 123 failed", res.Calls, res.Failures, res.Details)
	}
	start := time.Now()
	res, err = RunComm(ctx, c, Config{Seed: 2, Duration: 200 * time.Millisecond, MaxBytes: 1 << 20}, nil)
	if err != nil || res.Failures != 0 || res.Calls == 0 || time.Since(start) > 5*time.Second {
		t.Errorf("200 ms run: %d calls, %d failures, %v, took %v", res.Calls, res.Failures, err, time.Since(start))
	}
	// MaxBytes over the capacity: capped, so every call fits.
	res, err = RunComm(ctx, c, Config{Calls: 200, MaxBytes: 64 << 20}, nil)
	if err != nil || res.Calls != 200 || res.Failures != 0 {
		t.Errorf("MaxBytes over the capacity: %d calls, %d failures, %v; want 200 calls capped to fit", res.Calls, res.Failures, err)
	}
}

// panicWriter panics on the first progress line: a panic inside RunComm.
type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("soak test: a panic amid the calls") }

// TestRunRankPanic checks that a panic inside the rank is its reported
// error, written for the parent, with the communicator closed.
func TestRunRankPanic(t *testing.T) {
	shm := t.TempDir()
	t.Setenv("DETCOLL_SHM_DIR", shm)
	dir := t.TempDir()
	cfg := Config{Seed: 1, Calls: 1000, MaxBytes: 64 << 10, Progress: time.Nanosecond, Dir: dir}
	opts := detcoll.Options{WorldSize: 1, Capacity: cfg.Capacity(), Timeout: time.Minute}
	res := RunRank(context.Background(), 0, 1, opts, cfg, panicWriter{})
	if !strings.HasPrefix(res.Error, "panic: soak test: a panic amid the calls") || res.phase != PhaseCall {
		t.Errorf("error %q in phase %q; want the panic, in a call", firstLine(res.Error), res.phase)
	}
	ranks, kill := Collect(dir, 1)
	if ranks[0] == nil || ranks[0].Error != res.Error || kill != nil {
		t.Errorf("collected %+v, kill %+v; want the panic's result and no kill", ranks[0], kill)
	}
	if left := Leaks(shm); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	sum := Build(Setup{Config: cfg, Options: opts, World: 1, Leaked: Leaks(shm)}, ranks, kill)
	if sum.Pass || len(sum.Problems) != 1 || !strings.Contains(sum.Problems[0], "panic") {
		t.Errorf("summary: pass %v, problems %q; want one problem naming the panic", sum.Pass, sum.Problems)
	}
}

// TestSurviveRailAbort: a survivor across hosts reports how long after
// the kill its rail's aborts returned, and fails when its rail failed
// and they had not returned.
func TestSurviveRailAbort(t *testing.T) {
	dir := t.TempDir()
	killed := time.Now()
	if err := writeJSON(killFile(dir), KillRecord{Rank: 1, Phase: PhaseCall, At: killed.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	k := &Kill{Rank: 1, During: PhaseCall, Bound: time.Second}
	lost := &detcoll.RankError{Rank: 1, Err: detcoll.ErrPeerLost}
	for _, tc := range []struct {
		name    string
		failed  bool
		abortAt time.Time
		ok      bool
		abortMS float64
	}{
		{"no rails", false, time.Time{}, true, 0},
		{"aborts returned", true, killed.Add(300 * time.Millisecond), true, 300},
		{"aborts pending", true, time.Time{}, false, 0},
	} {
		res := &RankResult{Rank: 0, Error: lost.Error()}
		res.err, res.errAt, res.phase = lost, killed.Add(500*time.Millisecond), PhaseCall
		res.railFailed, res.railAbortAt = tc.failed, tc.abortAt
		s := survive(dir, k, res)
		if s.OK != tc.ok || math.Abs(s.RailAbortMS-tc.abortMS) > 1 || s.RailAbortHung != (tc.failed && tc.abortAt.IsZero()) {
			t.Errorf("%s: OK %v (%s), rail abort %.1f ms, hung %v; want OK %v, %.0f ms", tc.name, s.OK, s.Why, s.RailAbortMS, s.RailAbortHung, tc.ok, tc.abortMS)
		}
	}
}
