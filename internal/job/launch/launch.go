//go:build unix

package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/detcoll/detcoll/internal/job/jobenv"
	"github.com/detcoll/detcoll/internal/job/store"
)

// sweepPoll is how often Run looks for processes left in the ranks' groups;
// the kernel offers no event for a process group becoming empty.
const sweepPoll = 10 * time.Millisecond

// killWait bounds how long Run waits for SIGKILL to take effect on what is
// left in the ranks' groups.
const killWait = time.Second

// Run starts cfg.N ranks of cfg.Program on this host and waits for all of
// them.
//
// Each rank runs in a process group of its own, led by the rank, so that a
// signal for it reaches the processes it starts too; its stdin is
// /dev/null. Its environment is the base one (see Config.Env) plus RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (the global values: all ranks are
// local), MASTER_ADDR=127.0.0.1, MASTER_PORT (a loopback port that was free)
// and DETCOLL_SECRET (32 random bytes in hex, fresh for each job).
//
// Run returns nil when every rank exits with status 0. When a rank exits
// otherwise, the others get cfg.ReportGrace to exit on their own: a rank of
// detcoll fails within milliseconds of a peer's death, with an error naming
// it, and stopping it at once would lose that report. Then Run stops those
// still running (SIGTERM to each group, then SIGKILL to what is left after
// cfg.Grace), waits for all of them and returns a [*RankError] for the
// failure that happened first; its Ranks say how every rank ended, on its
// own or stopped. When ctx ends, Run stops the ranks the same way at once,
// in the report window too, and returns an error wrapping ctx.Err() and its
// cause unless a rank had failed before. Processes still in a rank's group
// once the rank exited are stopped the same way at the end: when Run
// returns, every rank has been waited for and nothing of the job runs on,
// except processes that left their group (setsid), whose output Run stops
// reading after cfg.Grace. On Linux a rank also gets SIGTERM should the
// launcher die without stopping it (kill -9).
//
// A bad cfg is a [*ConfigError], returned before anything starts. Run is
// safe for concurrent use: each call is a job of its own.
func Run(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	path, err := cfg.validate()
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return interrupted(ctx)
	}
	if cpus := runtime.NumCPU(); cfg.N > 2*cpus {
		// Ranks that wait for each other spin before they sleep: many
		// more ranks than CPUs take turns, and every call pays for it.
		fmt.Fprintf(cfg.Stderr, "detcoll: %d ranks on %d CPUs take turns on them: expect slow calls, and timings that measure the sharing\n", cfg.N, cpus)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	// setParentDeath ties each rank to the thread that starts it: keep this
	// goroutine, which starts them all, on its thread until they are reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	secret := newSecret()
	j := &job{cfg: cfg, exits: make(chan exit, cfg.N), addr: fmt.Sprintf("127.0.0.1:%d", port), secret: secret}
	startErr := j.start(path, port, secret)
	return j.supervise(ctx, startErr)
}

// job is one call of Run. Its goroutine (the caller's) starts the ranks and
// supervises them; it owns a waiter goroutine per rank, which ends with its
// one send on exits, and the output copiers, which end once the pipes are
// drained.
type job struct {
	cfg   Config
	procs []*exec.Cmd // the started ranks, by rank
	exits chan exit   // one value per started rank; buffered so waiters never block

	mu      sync.Mutex     // shared by the lineWriters: guards cfg.Stdout and cfg.Stderr
	readers []*os.File     // read ends of the output pipes, closed by drain
	copiers sync.WaitGroup // one goroutine per reader

	// The job's rendezvous, which the launcher tells of the first failure
	// (see tell).
	addr, secret string
	telling      sync.WaitGroup  // the reports in flight
	tmu          sync.Mutex      // guards tombstones
	tombstones   []*store.Server // hosted by the reports; closed after telling.Wait
}

// exit is the end of one rank.
type exit struct {
	rank    int
	at      time.Time  // when Wait returned: how failures are ordered
	err     *RankError // nil for status 0
	stopped os.Signal  // set by supervise: see RankExit.Stopped
}

// start starts the ranks in order; on error, the ranks started so far run on
// for supervise to stop.
func (j *job) start(path string, port int, secret string) error {
	base := jobenv.Strip(j.cfg.Env)
	for rank := range j.cfg.N {
		cmd := exec.Command(path, j.cfg.Args...)
		cmd.Args[0] = j.cfg.Program
		cmd.Env = childEnv(base, rank, j.cfg.N, port, secret)
		cmd.SysProcAttr = sysProcAttr()
		var ends []*os.File // the pipes' write ends, which only the rank keeps
		stdout, err := j.output(rank, j.cfg.Stdout, &ends)
		if err == nil {
			cmd.Stdout = stdout
			cmd.Stderr, err = j.output(rank, j.cfg.Stderr, &ends)
		}
		if err == nil {
			err = cmd.Start()
		}
		for _, f := range ends {
			f.Close()
		}
		if err != nil {
			return fmt.Errorf("launch: start rank %d: %w", rank, err)
		}
		j.procs = append(j.procs, cmd)
		if j.cfg.started != nil {
			j.cfg.started(rank, cmd.Process.Pid)
		}
		go func() {
			err := cmd.Wait()
			j.exits <- exit{rank: rank, at: time.Now(), err: rankError(rank, err)}
		}()
	}
	return nil
}

// output is what a rank writes to for w. An *os.File goes to the rank as it
// is, as does nothing for io.Discard (the rank gets /dev/null); anything else,
// and any prefixed output, goes through a pipe and a lineWriter. The pipe's
// write end is appended to ends, for the caller to close once the rank holds
// it.
func (j *job) output(rank int, w io.Writer, ends *[]*os.File) (io.Writer, error) {
	if w == io.Discard {
		return nil, nil
	}
	if f, ok := w.(*os.File); ok && !j.cfg.Prefix {
		return f, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	*ends = append(*ends, pw)
	j.readers = append(j.readers, r)
	lw := &lineWriter{mu: &j.mu, out: w}
	if j.cfg.Prefix {
		lw.prefix = fmt.Appendf(nil, "[rank %d] ", rank)
	}
	j.copiers.Go(func() {
		io.Copy(lw, r) // ends at EOF, or at drain's deadline
		lw.Flush()
	})
	return pw, nil
}

// supervise waits for every started rank. The first failure starts the
// report window (cfg.ReportGrace) for the others to exit on their own, and
// its end stops them; ctx's end or startErr stops them at once. See Run for
// what it returns.
func (j *job) supervise(ctx context.Context, startErr error) error {
	var (
		first    *exit            // the earliest failure
		cause    error            // why the ranks were stopped, when not for a failure
		ends     []exit           // every rank's end, in the order received
		report   <-chan time.Time // fires at the end of the report window
		stopping bool             // SIGTERM sent
		termAt   time.Time        // when, once stopping
		killAt   time.Time        // when SIGKILL follows, once stopping
		killed   bool             // SIGKILL sent, at killAt
		kill     <-chan time.Time
		done     = ctx.Done()
	)
	stop := func() {
		if stopping {
			return
		}
		stopping = true
		termAt = time.Now()
		j.signal(syscall.SIGTERM)
		killAt = time.Now().Add(j.cfg.Grace)
		kill = time.After(j.cfg.Grace) // collected unfired since Go 1.23: no Stop needed
	}
	if startErr != nil {
		cause = startErr
		stop()
	}
	for left := len(j.procs); left > 0; {
		select {
		case e := <-j.exits:
			left--
			switch {
			case killed && !e.at.Before(killAt):
				e.stopped = syscall.SIGKILL
			case stopping && !e.at.Before(termAt):
				e.stopped = syscall.SIGTERM
			}
			ends = append(ends, e)
			if e.rank == 0 && first != nil && left > 0 {
				// Rank 0 took the store with it after the job failed. A
				// rank still joining (slow to start) would dial a closed
				// address until its timeout: tell the first failure again,
				// which now hosts the failed store in rank 0's place. (Seen
				// in CI: rank 2 killed 5 ms after its start; rank 0 failed,
				// closed its store and exited before rank 1 dialled.)
				j.tell(*first)
			}
			if e.err != nil {
				if first == nil {
					j.tell(e)
				}
				if first == nil || e.at.Before(first.at) {
					first = &e
				}
				if report == nil && !stopping {
					report = time.After(j.cfg.ReportGrace)
				}
			}
		case <-report:
			stop()
		case <-done:
			done = nil
			if first == nil && !stopping {
				cause = interrupted(ctx)
			}
			stop()
		case <-kill:
			kill = nil
			killAt, killed = time.Now(), true
			j.signal(syscall.SIGKILL)
		}
	}
	j.telling.Wait()
	for _, t := range j.tombstones {
		t.Close()
	}
	j.sweep(stopping, killAt)
	j.drain()
	switch {
	case cause != nil:
		return cause
	case first != nil:
		return first.report(ends)
	}
	return nil
}

// report is Run's error for the job whose first failure is x, with how
// every rank ended.
func (x *exit) report(ends []exit) *RankError {
	re := *x.err
	re.Ranks = make([]RankExit, len(ends))
	for _, e := range ends {
		re.Ranks[e.rank] = RankExit{Rank: e.rank, Err: e.err, Stopped: e.stopped, After: e.at.Sub(x.at)}
	}
	return &re
}

// signal sends sig to every rank's group, including the groups of ranks that
// exited, which may still hold processes they started. (Once such a group
// is empty its id may in time name a new process, but a group only if that
// process makes itself a leader: the risk torchrun's killpg takes too.)
func (j *job) signal(sig syscall.Signal) {
	for _, cmd := range j.procs {
		signalGroup(cmd.Process.Pid, sig)
	}
}

// sweep stops the processes left in the ranks' groups after every rank
// exited: the job is over, so they get what stopped ranks get, SIGTERM
// (unless already sent) and SIGKILL at killAt. It returns when the groups
// are empty, or killWait after SIGKILL for a process the kernel cannot kill
// yet (uninterruptible sleep).
func (j *job) sweep(stopping bool, killAt time.Time) {
	gone := func(pid int) bool { return !groupAlive(pid) }
	var left []int
	for _, cmd := range j.procs {
		left = append(left, cmd.Process.Pid)
	}
	if left = slices.DeleteFunc(left, gone); len(left) == 0 {
		return
	}
	if !stopping {
		for _, pid := range left {
			signalGroup(pid, syscall.SIGTERM)
		}
		killAt = time.Now().Add(j.cfg.Grace)
	}
	var giveUp time.Time // set once SIGKILL is sent
	for len(left) > 0 {
		switch now := time.Now(); {
		case now.Before(killAt):
		case giveUp.IsZero():
			for _, pid := range left {
				signalGroup(pid, syscall.SIGKILL)
			}
			giveUp = now.Add(killWait)
		case now.After(giveUp):
			return
		}
		time.Sleep(sweepPoll)
		left = slices.DeleteFunc(left, gone)
	}
}

// drain waits for the output copiers and closes their pipes. A pipe ends
// when every process holding its write end is gone; one that left its group
// may hold it for ever, so reading stops after cfg.Grace.
func (j *job) drain() {
	deadline := time.Now().Add(j.cfg.Grace)
	for _, r := range j.readers {
		r.SetReadDeadline(deadline)
	}
	j.copiers.Wait()
	for _, r := range j.readers {
		r.Close()
	}
}

// rankError describes how rank's Wait ended; nil for status 0.
func rankError(rank int, err error) *RankError {
	if err == nil {
		return nil
	}
	re := &RankError{Rank: rank, ExitCode: -1, Err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		re.ExitCode = ee.ExitCode()
		re.Signal = exitSignal(ee.ProcessState)
	}
	return re
}

// interrupted is Run's error when ctx ended: it matches both ctx.Err() and
// the cause, such as the signal behind signal.NotifyContext.
func interrupted(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return fmt.Errorf("launch: job stopped: %w (%w)", cause, ctx.Err())
	}
	return fmt.Errorf("launch: job stopped: %w", ctx.Err())
}

// reportTimeout bounds the launcher's report of a failure to the store.
const reportTimeout = 2 * time.Second

// tell reports a rank's failure to the job's rendezvous store, as the ranks'
// launcher (store.Report), so that the others fail at once naming it even
// if it died before it joined (then only the launcher knows). With no store
// to tell (rank 0 died before it hosted one), it hosts a failed one at the
// job's address (store.Tombstone) until the job ends. Programs that are not
// detcoll ranks never listen there: for them this costs one refused dial
// and an idle listener.
func (j *job) tell(e exit) {
	reason := fmt.Sprintf("exited: %v (seen by the launcher)", e.err.Err)
	world, secret := j.cfg.N, []byte(j.secret)
	j.telling.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		defer cancel()
		t, _ := tellStore(ctx,
			func(ctx context.Context) error { return store.Report(ctx, j.addr, world, secret, e.rank, reason) },
			func() (*store.Server, error) { return store.Tombstone(j.addr, world, secret, e.rank, reason) })
		if t != nil {
			j.tmu.Lock()
			j.tombstones = append(j.tombstones, t)
			j.tmu.Unlock()
		}
	})
}

// tellStore reports a death (report) or, where nothing listens, hosts the
// failed store (tombstone). Rank 0 may start listening between the two:
// then the tombstone cannot have the address, and the report is tried
// again, now that a store is there to hear it (seen: 1 kill in 40 during
// Open at W=4 went unreported, and the other ranks waited for the dead one
// until their timeout). It gives up when ctx ends.
func tellStore(ctx context.Context, report func(context.Context) error, tombstone func() (*store.Server, error)) (*store.Server, error) {
	for {
		err := report(ctx)
		if !errors.Is(err, store.ErrNoServer) {
			return nil, err
		}
		s, err := tombstone()
		if err == nil {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("launch: tell the store: %w (last: %w)", ctx.Err(), err)
		case <-time.After(time.Millisecond):
		}
	}
}
