package soak

import (
	"errors"
	"fmt"
	"time"
)

// Config says what a soak runs. Zero fields mean the defaults below.
type Config struct {
	Seed uint64 // of the call sequence and the inputs; the same on every rank
	// Calls and Duration bound the run: it ends at whichever comes first.
	// At least one must be set (Duration 0 and Calls 0 mean DefaultDuration).
	Calls    int64
	Duration time.Duration
	// MaxBytes is the largest input per rank of one call (sizes are
	// log-uniform from one element to it); it must fit the communicator's
	// capacity less capacityMargin. 0 means DefaultMaxBytes.
	MaxBytes int
	// MaxDelay bounds the host-side waits before calls; DelayProb is the
	// chance that a rank waits before a call (each rank draws its own).
	// 0 means DefaultMaxDelay and DefaultDelayProb; a negative MaxDelay
	// means no waits.
	MaxDelay  time.Duration
	DelayProb float64
	// Batch is the number of calls between checks (cuda: between
	// synchronisations of the stream: calls queue back to back). 0 means
	// 1 on the cpu backend (each call checked at once: a survivor of a
	// kill is never busy checking a large batch when the error comes)
	// and DefaultDeviceBatch on cuda.
	Batch int
	// Progress is how often rank 0 writes a progress line. 0 means
	// DefaultProgress; negative: never.
	Progress time.Duration
	// CorruptCall, when positive, flips one bit of that call's output on
	// rank 0 after the call and before the check: a self-test that the
	// checker fails (the run must then report a failure).
	CorruptCall int64
	// Kill, when set, injects a fault: see Kill.
	Kill *Kill
	// Dir is the directory where a rank writes its result and the killed
	// rank its kill time (set by the launching parent); empty when the
	// ranks were launched by another program.
	Dir string

	// The job, read by Run. Run's errors name these settings, and those
	// above, by the flags of detcoll soak, which sets them.

	// N is the number of local ranks Run starts when no launcher started
	// this process, >= 1; under a launcher the world is the launcher's.
	N int
	// Backend and Timeout are the communicator's (detcoll.Options).
	Backend string
	Timeout time.Duration
	// Output is the file where the JSON summary goes; "" for none.
	Output string
	// Args are the arguments that make this program run one rank of the
	// same soak ("soak" and its flags, for detcoll), for the ranks Run
	// starts when no launcher started this process.
	Args []string
}

// ConfigError is a bad setting of a Config, reported by Run before any
// rank starts (detcoll soak's usage error).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns e.Err.
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, args ...any) error {
	return &ConfigError{fmt.Errorf(format, args...)}
}

// Defaults of Config.
const (
	DefaultDuration    = time.Minute
	DefaultMaxBytes    = 8 << 20
	DefaultMaxDelay    = time.Millisecond
	DefaultDelayProb   = 0.01
	DefaultDeviceBatch = 16
	DefaultProgress    = 5 * time.Second
	// capacityMargin is room in the capacity beyond MaxBytes: the *Many
	// calls round each buffer up to 64 bytes.
	capacityMargin = 4096
)

// batch returns the calls per batch on a device (cuda) or host
// communicator.
func (cfg Config) batch(device bool) int {
	switch {
	case cfg.Batch > 0:
		return cfg.Batch
	case device:
		return DefaultDeviceBatch
	}
	return 1
}

// Capacity is the Options.Capacity a soak of cfg needs.
func (cfg Config) Capacity() int64 { return int64(cfg.withDefaults().MaxBytes) + capacityMargin }

func (cfg Config) withDefaults() Config {
	if cfg.Calls == 0 && cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.MaxDelay < 0 {
		cfg.MaxDelay, cfg.DelayProb = 0, 0
	} else if cfg.DelayProb == 0 {
		cfg.DelayProb = DefaultDelayProb
	}
	if cfg.Progress == 0 {
		cfg.Progress = DefaultProgress
	}
	if cfg.Kill != nil && cfg.Kill.Bound == 0 {
		k := *cfg.Kill
		k.Bound = DefaultKillBound
		cfg.Kill = &k
	}
	return cfg
}

// validate checks cfg (with defaults) for world ranks, naming the bad
// field.
func (cfg Config) validate(world int) error {
	switch {
	case cfg.Calls < 0:
		return fmt.Errorf("soak: Calls %d: want >= 0", cfg.Calls)
	case cfg.Duration < 0:
		return fmt.Errorf("soak: Duration %v: want >= 0", cfg.Duration)
	case cfg.MaxBytes < 8*world:
		return fmt.Errorf("soak: MaxBytes %d: want at least 8 bytes per rank (%d)", cfg.MaxBytes, 8*world)
	case cfg.DelayProb < 0 || cfg.DelayProb > 1:
		return fmt.Errorf("soak: DelayProb %v: want [0, 1]", cfg.DelayProb)
	case cfg.Batch < 0:
		return fmt.Errorf("soak: Batch %d: want >= 0", cfg.Batch)
	case cfg.CorruptCall < 0:
		return fmt.Errorf("soak: CorruptCall %d: want >= 0", cfg.CorruptCall)
	}
	if cfg.Kill != nil {
		return cfg.Kill.validate(world)
	}
	return nil
}

// Kill is a fault to inject: rank Rank SIGKILLs itself During a phase,
// and every other rank must then fail with an error matching
// detcoll.ErrPeerLost that names Rank, within Bound of the kill, close,
// and leave nothing behind.
type Kill struct {
	Rank int `json:"rank"`
	// During is PhaseOpen (After from the start of the rank, while Open
	// runs), PhaseCall (After from Open's return, amid the calls) or
	// PhaseClose (as the rank enters Close, before it publishes the
	// Close, at the end of the run: every other rank's Close must fail).
	During string        `json:"during"`
	After  time.Duration `json:"after_ns"`
	Bound  time.Duration `json:"bound_ns"` // 0 means DefaultKillBound
}

// The phases of a rank, for Kill.During and the reports.
const (
	PhaseOpen  = "open"
	PhaseCall  = "call"
	PhaseClose = "close"
	PhaseDone  = "done" // Close returned
)

// DefaultKillBound is a survivor's longest time to error (the contract's
// goal).
const DefaultKillBound = time.Second

func (k *Kill) validate(world int) error {
	switch {
	case k.Rank < 0 || k.Rank >= world:
		return fmt.Errorf("soak: Kill.Rank %d: want [0, %d)", k.Rank, world)
	case world < 2:
		return errors.New("soak: Kill needs at least 2 ranks: a survivor")
	case k.During != PhaseOpen && k.During != PhaseCall && k.During != PhaseClose:
		return fmt.Errorf("soak: Kill.During %q: want open, call or close", k.During)
	case k.After < 0:
		return fmt.Errorf("soak: Kill.After %v: want >= 0", k.After)
	case k.Bound < 0:
		return fmt.Errorf("soak: Kill.Bound %v: want > 0", k.Bound)
	}
	return nil
}
