package soak

import (
	"context"
	"fmt"
	"github.com/detcoll/detcoll/internal/core/num"
	"io"
	"time"

	"github.com/detcoll/detcoll"
)

// arenaBudget ends a batch early once its arenas hold this many bytes.
const arenaBudget = 64 << 20

// agreeEvery is how many calls a run bounded by a duration makes between
// agreeing whether to stop.
const agreeEvery = 64

// maxDetails is how many failures a rank keeps in detail.
const maxDetails = 8

// RankResult is what one rank did.
type RankResult struct {
	Rank      int              `json:"rank"`
	Calls     int64            `json:"calls"`  // made (cuda: queued)
	Bytes     int64            `json:"bytes"`  // this rank's input bytes over the calls
	Checks    int64            `json:"checks"` // buffers compared (outputs, inputs, guard sweeps)
	Failures  int64            `json:"failures"`
	Details   []Failure        `json:"failure_details"` // the first few failures
	CallsByOp map[string]int64 `json:"calls_by_op"`
	Seconds   float64          `json:"seconds"` // of the calls, from Open's return
	// Error is what ended the run early (a failed call, Open or Close, a
	// panic); empty when it ran to its end.
	Error string `json:"error,omitempty"`
	// Survivor is set on the other ranks of a run with a Kill.
	Survivor *Survivor `json:"survivor,omitempty"`
	// DeviceFree* are the GPU's free bytes (cuda) before Open and after
	// Close of the communicator; 0 on the cpu backend.
	Hosts            int   `json:"hosts,omitempty"` // across hosts: their number (package nccl)
	DeviceFreeBefore int64 `json:"device_free_before"`
	DeviceFreeAfter  int64 `json:"device_free_after"`

	err   error     // the error behind Error
	errAt time.Time // when it came back
	// openAt is when RunRank called Open (the clock of both the kill
	// record and errAt, wall time, as the ranks are separate processes).
	openAt time.Time
	phase  string // where: PhaseOpen, PhaseCall, PhaseClose
	// railFailed (its failure aborted the rail) and railAbortAt are the
	// rails' Aborted (package nccl), when the communicator has rails.
	railFailed  bool
	railAbortAt time.Time
	// closeErr and closeMS are Close's outcome and duration (RunRank).
	closeErr error
	closeMS  float64
}

// RunComm runs the soak of cfg on c, an open communicator, and returns this
// rank's counts. Sizes are capped by c's capacity (less a small margin). Every rank of c must call it with the same cfg. A wrong
// result is counted (and the run goes on: every rank makes every call);
// an error from a call ends the run and is returned with the counts so
// far, after aborting c so that peers fail at once. Rank 0 writes a
// progress line to progress every cfg.Progress. With a cuda
// communicator the calls run on device memory, queued on a stream; RunComm
// then locks the calling goroutine to its thread while it runs.
func RunComm(ctx context.Context, c *detcoll.Comm, cfg Config, progress io.Writer) (*RankResult, error) {
	return runOn(ctx, c, cfg, nil, progress)
}

// runOn is RunComm with the inputs made beforehand (nil: make them now).
func runOn(ctx context.Context, c *detcoll.Comm, cfg Config, pl *pools, progress io.Writer) (*RankResult, error) {
	res := &RankResult{Rank: c.Rank()}
	cfg = cfg.withDefaults()
	// The sizes are capped by the communicator's capacity.
	if limit := int(c.Options().Capacity) - capacityMargin; cfg.MaxBytes > limit {
		if limit < 8*c.WorldSize() {
			return res, fmt.Errorf("soak: the communicator's capacity of %d bytes leaves no room for calls", c.Options().Capacity)
		}
		cfg.MaxBytes = limit
	}
	if err := cfg.validate(c.WorldSize()); err != nil {
		return res, err
	}
	var ex executor = &hostExec{c: c}
	if c.Device() >= 0 {
		d, err := openDevice(c)
		if err != nil {
			return res, fmt.Errorf("soak: GPU %d: %w", c.Device(), err)
		}
		defer d.close()
		ex = d
	}
	if pl == nil || pl.world != c.WorldSize() {
		pl = newPools(cfg.Seed, c.WorldSize())
	}
	err := run(ctx, c.WorldSize(), c.Rank(), ex, cfg, pl, progress, res)
	if err != nil {
		c.Abort(err)
	}
	return res, err
}

// run is RunComm's loop on an executor.
func run(ctx context.Context, w, rank int, ex executor, cfg Config, pl *pools, progress io.Writer, res *RankResult) error {
	_, device := ex.(*deviceExec)
	p := &planner{seed: cfg.Seed, world: w, rank: rank, maxBytes: cfg.MaxBytes,
		maxDelay: cfg.MaxDelay, delayProb: cfg.DelayProb, ops: allOps(), reds: num.RedOps()}
	b := &batch{world: w, rank: rank}
	perBatch := cfg.batch(device)
	res.CallsByOp = map[string]int64{}
	start := time.Now()
	next := start.Add(cfg.Progress)
	defer func() { res.Seconds = time.Since(start).Seconds() }()
	fail := func(err error) error {
		res.err, res.errAt, res.phase = err, time.Now(), PhaseCall
		res.Error = err.Error()
		return err
	}
	var number, agreed int64
	for {
		if cfg.Calls > 0 && number >= cfg.Calls {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fail(fmt.Errorf("soak: interrupted after %d calls: %w", number, context.Cause(ctx)))
		}
		if cfg.Duration > 0 && (number == 0 || number-agreed >= agreeEvery) {
			// Ranks stop at the same call: any rank past the duration
			// stops them all. (Every agreeEvery calls, counted alike on
			// every rank, so that the one-byte gathers stay rare.)
			agreed = number
			stop, err := ex.agree(time.Since(start) >= cfg.Duration)
			if err != nil {
				return fail(fmt.Errorf("soak: agreeing whether to stop after call %d: %w", number, err))
			}
			if stop {
				return nil
			}
		}
		b.reset()
		for len(b.calls) < perBatch && (cfg.Calls == 0 || number < cfg.Calls) && b.inLen+b.outLen < arenaBudget {
			number++
			b.add(p.plan(number))
		}
		b.fill(pl)
		if err := ex.start(b); err != nil {
			return fail(fmt.Errorf("soak: preparing calls %d to %d: %w", b.calls[0].Number, number, err))
		}
		for _, pc := range b.calls {
			if pc.Delay > 0 {
				time.Sleep(pc.Delay)
			}
			if err := ex.issue(b, pc); err != nil {
				return fail(fmt.Errorf("soak: call %d (%v, %v, counts %v): %w", pc.Number, pc.Op, pc.DType, pc.Counts, err))
			}
			res.Calls++
			res.Bytes += int64(pc.InBytes(w))
			name := pc.Op.String()
			if pc.Op.Reduces() && pc.Red != num.Sum {
				name += "/" + pc.Red.String()
			}
			res.CallsByOp[name]++
		}
		if err := ex.finish(b); err != nil {
			return fail(fmt.Errorf("soak: calls %d to %d: %w", b.calls[0].Number, number, err))
		}
		if cfg.CorruptCall > 0 && rank == 0 {
			for _, pc := range b.calls {
				if pc.Number == cfg.CorruptCall {
					b.out[pc.out.off] ^= 1
				}
			}
		}
		checks, failed := b.check(pl)
		res.Checks += checks
		res.Failures += int64(len(failed))
		for _, f := range failed {
			if len(res.Details) < maxDetails {
				res.Details = append(res.Details, f)
			}
		}
		if now := time.Now(); rank == 0 && cfg.Progress > 0 && !now.Before(next) {
			next = now.Add(cfg.Progress)
			writeProgress(progress, now.Sub(start), res)
		}
	}
}

func allOps() []Op {
	ops := make([]Op, numOps)
	for i := range ops {
		ops[i] = Op(i)
	}
	return ops
}

// writeProgress writes one line: time, calls, rate, bytes, checks,
// failures.
func writeProgress(w io.Writer, d time.Duration, res *RankResult) {
	if w == nil {
		return
	}
	fmt.Fprintf(w, "soak: %s: rank 0: %d calls (%.0f/s), %s, %d checks, %d failures (the summary counts every rank)\n",
		d.Round(time.Second), res.Calls, float64(res.Calls)/d.Seconds(), formatBytes(res.Bytes), res.Checks, res.Failures)
}

// formatBytes writes n in binary units.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n), 0
	for v >= unit && u < 5 {
		v /= unit
		u++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[u-1])
}
