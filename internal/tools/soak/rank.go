package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/nccl"
)

// closeTimeout bounds Close after a failure.
const closeTimeout = 30 * time.Second

// Survivor is how a rank that was not killed saw the kill.
type Survivor struct {
	Phase string `json:"phase"` // where the error came back: open, call or close; "" if none did
	Error string `json:"error"`
	// PeerLost is whether the error matches detcoll.ErrPeerLost;
	// NamedRank is the rank its *detcoll.RankError names (-1: none).
	PeerLost  bool `json:"peer_lost"`
	NamedRank int  `json:"named_rank"`
	// TimeToErrorMS is from the kill (the killed rank's clock, just
	// before its SIGKILL), or from this rank's entry into Open if that
	// came later, to the error on this rank; -1 if unknown. The bound is
	// on how long a rank that waits for a dead peer goes on waiting: a
	// rank that the machine started late (seen in CI: 1.6 s after its
	// peer died, with the tests of other packages running) did not wait
	// while it was not yet there.
	TimeToErrorMS float64 `json:"time_to_error_ms"`
	// EnteredOpenAfterKillMS is how long after the kill this rank began
	// Open; 0 if it began before.
	EnteredOpenAfterKillMS float64 `json:"entered_open_after_kill_ms,omitempty"`
	// RailAbortMS is, across hosts on GPUs (package nccl's rails), how
	// long after the kill the rail's ncclCommAbort had returned for both
	// its communicators; RailAbortHung says the rail failed and its
	// aborts had not returned when the rank finished.
	RailAbortMS   float64 `json:"rail_abort_ms,omitempty"`
	RailAbortHung bool    `json:"rail_abort_hung,omitempty"`
	CloseError    string  `json:"close_error"`
	CloseMS       float64 `json:"close_ms"` // Close's duration
	OK            bool    `json:"ok"`
	Why           string  `json:"why,omitempty"` // why not OK
}

// KillRecord is what the killed rank writes just before its SIGKILL.
type KillRecord struct {
	Rank  int    `json:"rank"`
	Phase string `json:"phase"` // where it was: open, call, close or done
	At    int64  `json:"at_unix_ns"`
}

// killFile and rankFile name the files of a run's directory.
func killFile(dir string) string { return filepath.Join(dir, "kill.json") }
func rankFile(dir string, rank int) string {
	return filepath.Join(dir, fmt.Sprintf("rank-%d.json", rank))
}

// RunRank is one rank of a soak: Open with opts, RunComm, Close, with the
// fault of cfg.Kill injected. A panic anywhere in them is caught and
// reported as the rank's error. When cfg.Dir is set the result is also
// written there for the launching parent (Collect). rank and world are
// this process's (the killed rank must know itself before Open, and the
// inputs are made before it: a survivor's time to error is then not
// spent making them).
//
// The killed rank does not return: it SIGKILLs itself. The others, on a
// run with a Kill, run on when ctx ends (a launcher stops the ranks as
// soon as one dies; their report is the point), bounded by the
// communicator's timeout and closeTimeout.
func RunRank(ctx context.Context, rank, world int, opts detcoll.Options, cfg Config, progress io.Writer) (res *RankResult) {
	cfg = cfg.withDefaults()
	res = &RankResult{Rank: rank}
	kill := cfg.Kill
	victim := kill != nil && kill.Rank == rank
	if kill != nil {
		ctx = context.WithoutCancel(ctx)
	}
	var phase atomic.Value // where this rank is: PhaseOpen, PhaseCall, PhaseClose, PhaseDone
	phase.Store(PhaseOpen)
	var settled atomic.Bool // a survivor has its outcome (an error, or its end)
	var hung atomic.Bool    // the watchdog wrote the result: leave it
	if kill != nil && !victim && cfg.Dir != "" {
		stop := make(chan struct{})
		defer close(stop)
		go watchdog(cfg.Dir, rank, kill, &phase, &settled, &hung, stop, progress)
	}
	killNow := func() { killSelf(cfg.Dir, rank, phase.Load().(string)) }
	var c *detcoll.Comm
	defer func() {
		if p := recover(); p != nil {
			res.Error = fmt.Sprintf("panic: %v\n%s", p, debug.Stack())
			res.err, res.errAt, res.phase = errors.New(res.Error), time.Now(), phase.Load().(string)
			if c != nil {
				// Peers fail now rather than at their timeout, and the
				// shared memory is released.
				c.Abort(res.err)
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
				c.Close(cctx)
				cancel()
			}
		}
		if a, ok := opts.Interconnect.(interface{ Aborted() (bool, time.Time) }); ok {
			res.railFailed, res.railAbortAt = a.Aborted()
		}
		if kill != nil && !victim {
			res.Survivor = survive(cfg.Dir, kill, res)
		}
		if cfg.Dir != "" && !hung.Load() {
			writeJSON(rankFile(cfg.Dir, rank), res)
		}
	}()
	if opts.Backend == "cuda" {
		runtime.LockOSThread() // RunComm's executor keeps the GPU's context current on this thread
		defer runtime.UnlockOSThread()
		if os.Getenv(nccl.EnvVirtualHosts) != "" {
			// Virtual hosts: the rails through NCCL, set up before Open.
			var err error
			if opts, err = nccl.Options(ctx, opts); err != nil {
				res.err, res.errAt, res.phase, res.Error = err, time.Now(), PhaseOpen, err.Error()
				settled.Store(true)
				return res
			}
		}
		res.DeviceFreeBefore = deviceFree(opts)
		defer func() { res.DeviceFreeAfter = deviceFree(opts) }()
	}

	pl := newPools(cfg.Seed, world)
	if victim && kill.During == PhaseOpen {
		time.AfterFunc(kill.After, killNow)
	}
	var err error
	res.openAt = time.Now()
	c, err = detcoll.Open(ctx, opts)
	if err != nil {
		res.err, res.errAt, res.phase, res.Error = err, time.Now(), PhaseOpen, err.Error()
		settled.Store(true)
		return res
	}
	phase.Store(PhaseCall)
	if victim && kill.During == PhaseCall {
		time.AfterFunc(kill.After, killNow)
	}
	run, runErr := runOn(ctx, c, cfg, pl, progress)
	run.DeviceFreeBefore, run.Hosts, run.openAt = res.DeviceFreeBefore, opts.Hosts, res.openAt
	*res = *run
	if runErr != nil && res.err == nil { // refused before any call
		res.err, res.errAt, res.phase, res.Error = runErr, time.Now(), PhaseCall, runErr.Error()
	}
	if runErr != nil {
		settled.Store(true)
	}

	phase.Store(PhaseClose)
	if victim && kill.During == PhaseClose {
		// Killed as it enters Close, before it publishes the Close: every
		// other rank's Close then waits for an acknowledgement that never
		// comes and must fail. (A kill racing with the victim's own Close
		// mostly lands after its acknowledgement, and tests nothing.)
		killSelf(cfg.Dir, rank, PhaseClose)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	start := time.Now()
	res.closeErr = c.Close(cctx)
	res.closeMS = ms(time.Since(start))
	settled.Store(true)
	if runErr == nil && res.closeErr != nil {
		res.err, res.errAt, res.phase, res.Error = res.closeErr, time.Now(), PhaseClose, res.closeErr.Error()
	}
	phase.Store(PhaseDone)
	if victim {
		// The kill was due earlier (or is now, in Close): wait for it.
		if kill.During != PhaseClose {
			killNow()
		}
		select {}
	}
	return res
}

// killSelf records the kill, then SIGKILLs this process.
func killSelf(dir string, rank int, phase string) {
	writeJSON(killFile(dir), KillRecord{Rank: rank, Phase: phase, At: time.Now().UnixNano()})
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// watchdog ends a survivor that has no outcome long after the kill (a
// hang: the contract wants an error within the bound), after writing
// its result and its goroutines' stacks (to progress), so that the
// report says where it hung rather than that it left nothing.
//
// Every survivor's watchdog fires at the same time (from the kill's), and
// each exits a second after writing: the exit of one (rank 0 hosts the
// store) must not turn another's hang into an error that blames it.
func watchdog(dir string, rank int, k *Kill, phase *atomic.Value, settled, hung *atomic.Bool, stop <-chan struct{}, progress io.Writer) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var rec KillRecord
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if rec.At == 0 && readJSON(killFile(dir), &rec) != nil {
			continue
		}
		// From the kill, not from this rank's Open as the time to error
		// may be: all at once, as above; 5 bounds cover a late start.
		after := 5 * k.Bound
		if settled.Load() || time.Since(time.Unix(0, rec.At)) < after {
			continue
		}
		hung.Store(true)
		p := phase.Load().(string)
		why := fmt.Sprintf("no outcome %v after the kill: hung in %s", after, p)
		writeJSON(rankFile(dir, rank), &RankResult{Rank: rank, Error: why,
			Survivor: &Survivor{Phase: p, NamedRank: -1, TimeToErrorMS: -1, Why: why}})
		if progress != nil {
			buf := make([]byte, 1<<16)
			fmt.Fprintf(progress, "rank %d: %s; its goroutines:\n%s\n", rank, why, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Second)
		os.Exit(1)
	}
}

// survive judges how a survivor saw the kill of k.Rank.
func survive(dir string, k *Kill, res *RankResult) *Survivor {
	s := &Survivor{Phase: res.phase, NamedRank: -1, TimeToErrorMS: -1, CloseMS: res.closeMS}
	if res.closeErr != nil {
		s.CloseError = res.closeErr.Error()
	}
	if res.err == nil {
		s.Why = "no error: the run ended without one"
		return s
	}
	s.Error = res.Error
	s.PeerLost = errors.Is(res.err, detcoll.ErrPeerLost)
	var re *detcoll.RankError
	if errors.As(res.err, &re) {
		s.NamedRank = re.Rank
	}
	// The record is written before the kill, so it is there by the time
	// the kill's error is; wait a little in case the error came first.
	var rec KillRecord
	for try := 0; ; try++ {
		if err := readJSON(killFile(dir), &rec); err == nil || try == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rec.At != 0 && !res.railAbortAt.IsZero() {
		s.RailAbortMS = ms(res.railAbortAt.Sub(time.Unix(0, rec.At)))
	}
	s.RailAbortHung = res.railFailed && res.railAbortAt.IsZero()
	if rec.At != 0 {
		from := time.Unix(0, rec.At)
		if !res.openAt.IsZero() && res.openAt.After(from) {
			s.EnteredOpenAfterKillMS = ms(res.openAt.Sub(from))
			from = res.openAt
		}
		s.TimeToErrorMS = ms(res.errAt.Sub(from))
	}
	switch {
	case !s.PeerLost:
		s.Why = "the error does not match detcoll.ErrPeerLost"
	case s.NamedRank != k.Rank:
		s.Why = fmt.Sprintf("the error names rank %d, not the killed rank %d", s.NamedRank, k.Rank)
	case rec.At == 0:
		s.Why = "the killed rank left no record of its kill"
	case s.TimeToErrorMS > ms(k.Bound):
		s.Why = fmt.Sprintf("the error came %.1f ms after the kill (or after this rank entered Open, if later), over the bound of %v", s.TimeToErrorMS, k.Bound)
	case s.RailAbortHung:
		// Its NCCL kernels may still spin, and freeing device memory
		// would wait for them: the rail must stop, not only report.
		s.Why = "the rail's ncclCommAbort had not returned when the rank finished"
	default:
		s.OK = true
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// writeJSON writes v to path through a temporary file and a rename, so
// that a reader sees all of it or nothing.
func writeJSON(path string, v any) error {
	if path == "" || filepath.Dir(path) == "." {
		return nil
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
