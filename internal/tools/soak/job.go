package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/settings"
	"github.com/detcoll/detcoll/internal/job/jobenv"
	"github.com/detcoll/detcoll/internal/job/launch"
	"github.com/detcoll/detcoll/internal/tools/coord"
	"github.com/detcoll/detcoll/nccl"
)

// DirVar names the directory where ranks started by the soak itself
// write their results; it also tells a rank that its parent is a soak.
const DirVar = settings.SoakDir

// closeGrace is how long survivors of a kill get to report and close.
const closeGrace = 10 * time.Second

// Run is detcoll soak. Started by itself it is the parent: it starts
// cfg.N local ranks of this program with cfg.Args, each writing its
// result to a directory, then makes the summary from the results and
// what is left of the job's shared memory, prints it on stdout and
// writes cfg.Output. Started by the soak (DirVar set) it is one of those
// ranks (RunRank). Started by another launcher it is one rank of that
// job, and the ranks gather their results over the communicator (no
// fault injection). A Kill's zero fields get their defaults here: the
// last rank, PhaseCall, 10 ms into Open or 100 ms after it.
//
// Every setting is checked before any rank starts; a bad one is a
// *ConfigError. Run returns an error when the soak did not pass.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	switch {
	case cfg.N < 1:
		return configErrorf("-n must be at least 1, got %d", cfg.N)
	case cfg.Backend != "cpu" && cfg.Backend != "cuda":
		return configErrorf("--backend %q: want cpu or cuda", cfg.Backend)
	case cfg.Timeout <= 0:
		return configErrorf("--timeout must be positive, got %v", cfg.Timeout)
	case cfg.Calls < 0 || cfg.Duration < 0:
		return configErrorf("--calls and --duration must not be negative")
	case cfg.Batch < 0:
		return configErrorf("--batch must not be negative, got %d", cfg.Batch)
	case cfg.DelayProb < 0 || cfg.DelayProb > 1:
		return configErrorf("--delay-prob %v: want [0, 1]", cfg.DelayProb)
	}
	job, found, err := jobenv.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	world := cfg.N
	if found {
		world = job.World
	}
	if cfg.Kill != nil {
		k := *cfg.Kill
		if k.Rank < 0 {
			k.Rank = world - 1
		}
		if k.During == "" {
			k.During = PhaseCall
		}
		if k.After == 0 && k.During == PhaseOpen {
			k.After = 10 * time.Millisecond
		} else if k.After == 0 && k.During == PhaseCall {
			k.After = 100 * time.Millisecond
		}
		switch {
		case world < 2:
			return configErrorf("--kill-during needs at least 2 ranks, got %d", world)
		case k.Rank >= world:
			return configErrorf("--kill-rank %d: want [0, %d)", k.Rank, world)
		case k.During != PhaseOpen && k.During != PhaseCall && k.During != PhaseClose:
			return configErrorf("--kill-during %q: want open, call or close", k.During)
		case found && settings.Get(DirVar) == "":
			return configErrorf("fault injection needs the ranks that detcoll soak starts itself, not another launcher's")
		}
		cfg.Kill = &k
	}
	if mb := cfg.withDefaults().MaxBytes; mb < 8*world {
		return configErrorf("--max-bytes %d: want at least 8 bytes per rank (%d)", mb, 8*world)
	}
	opts := detcoll.Options{Backend: cfg.Backend, Timeout: cfg.Timeout, Capacity: cfg.Capacity()}
	if !found {
		if cfg.Backend == "cuda" {
			if err := launch.NeedCUDA(); err != nil {
				return err
			}
		}
		return parent(ctx, cfg, opts, stdout, stderr)
	}
	if dir := settings.Get(DirVar); dir != "" {
		cfg.Dir = dir
		res := RunRank(ctx, job.Rank, job.World, opts, cfg, stderr)
		if res.Survivor != nil && res.Survivor.OK && res.Failures == 0 {
			return nil // failed as it should; the parent reports
		}
		if res.Error != "" {
			return errors.New(res.Error)
		}
		if res.Failures > 0 {
			return fmt.Errorf("%d wrong results", res.Failures)
		}
		return nil
	}
	return launched(ctx, job, cfg, opts, stdout, stderr)
}

// parent starts cfg.N ranks of this program with a directory for their
// results and a shared-memory directory of their own, then makes the
// summary from the results and what is left in that directory.
func parent(ctx context.Context, cfg Config, opts detcoll.Options, stdout, stderr io.Writer) error {
	start := time.Now()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start its ranks: %w", err)
	}
	dir, err := os.MkdirTemp("", "detcoll-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	shmBase := settings.Get(settings.SHMDir)
	if shmBase == "" {
		shmBase = "/dev/shm"
	}
	shm, err := os.MkdirTemp(shmBase, "detcoll-soak-")
	if err != nil {
		return fmt.Errorf("a shared-memory directory for the job: %w", err)
	}
	defer os.RemoveAll(shm)
	err = launch.Run(ctx, launch.Config{
		N:       cfg.N,
		Program: exe,
		Args:    cfg.Args,
		Env:     append(os.Environ(), DirVar+"="+dir, settings.SHMDir+"="+shm),
		Stdout:  stderr, // the ranks' own words are logs; the summary is the parent's
		Stderr:  stderr,
		Grace:   2 * closeGrace,
		// A killed rank must not stop the survivors before they report.
		ReportGrace: closeGrace,
	})
	exits := map[int]string{}
	var re *launch.RankError
	if errors.As(err, &re) {
		for _, e := range re.Ranks {
			if e.Err != nil {
				exits[e.Rank] = e.Err.Error()
			}
		}
	} else if err != nil && ctx.Err() == nil {
		return err
	}
	ranks, kill := Collect(dir, cfg.N)
	sum := Build(Setup{Config: cfg, Options: opts, World: cfg.N, Start: start, Leaked: Leaks(shm), Exits: exits},
		ranks, kill)
	return finish(sum, cfg.Output, stdout)
}

// launched is one rank under another launcher: the ranks gather their
// results over the communicator and rank 0 writes the summary.
func launched(ctx context.Context, job jobenv.Job, cfg Config, opts detcoll.Options, stdout, stderr io.Writer) error {
	start := time.Now()
	// A cuda communicator makes device calls only: the results are
	// gathered over a cpu one of the same ranks (as verify does).
	var host, c *detcoll.Comm
	var err error
	if opts.Backend == "cuda" {
		runtime.LockOSThread() // the soak keeps the GPU's context current on this thread
		defer runtime.UnlockOSThread()
		var prepare func(context.Context, detcoll.Options) (detcoll.Options, error)
		if os.Getenv(nccl.EnvVirtualHosts) != "" {
			prepare = nccl.Options // virtual hosts: the rails through NCCL
		}
		host, c, err = coord.OpenWith(ctx, job, 64<<10, opts, prepare)
	} else {
		c, err = detcoll.Open(ctx, opts)
		host = c
	}
	if err != nil {
		return err
	}
	defer host.Close(ctx)
	defer c.Close(ctx)
	res, err := RunComm(ctx, c, cfg, stderr)
	if err != nil {
		host.Abort(err)
		return err
	}
	all, err := Gather(ctx, host, res)
	if err != nil {
		return err
	}
	if err := c.Close(ctx); err != nil {
		return err
	}
	if err := host.Close(ctx); err != nil {
		return err
	}
	if job.Rank != 0 {
		if res.Failures > 0 {
			return fmt.Errorf("%d wrong results", res.Failures)
		}
		return nil
	}
	return finish(Build(Setup{Config: cfg, Options: opts, World: job.World, Start: start}, all, nil), cfg.Output, stdout)
}

// finish writes the summary to output and stdout; an error when it did
// not pass.
func finish(sum *Summary, output string, stdout io.Writer) error {
	if output != "" {
		if err := Write(output, sum); err != nil {
			return err
		}
	}
	Print(stdout, sum)
	if !sum.Pass {
		return fmt.Errorf("%d problems", len(sum.Problems))
	}
	return nil
}
