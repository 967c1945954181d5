package detcoll

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/settings"
	"github.com/detcoll/detcoll/internal/job/jobenv"
)

// Defaults for zero Options fields.
const (
	DefaultCapacity = 64 << 20
	DefaultTimeout  = 10 * time.Minute
)

// Options configure Open. The zero value opens the cpu backend with the
// rank, world size, rendezvous address and secret found in the environment
// (detcoll run, torchrun, Open MPI or Slurm), or a single rank when the
// environment names none.
type Options struct {
	// Backend is "cpu" (the default) or "cuda".
	Backend string `json:"backend"`

	// WorldSize and Rank say who this process is. WorldSize 0 means: from
	// the environment.
	WorldSize int `json:"world_size"`
	Rank      int `json:"rank"`
	// Addr is the rendezvous store's host:port, hosted by rank 0. Empty
	// means: from the environment (DETCOLL_ADDR, else MASTER_ADDR and
	// MASTER_PORT).
	Addr string `json:"addr,omitempty"`
	// Secret is the per-job secret every rank must present to join.
	// Empty means DETCOLL_SECRET, which detcoll run sets.
	Secret string `json:"-"`
	// Rendezvous, when set, carries Open's setup exchange in place of the
	// store (Addr and Secret are then unused): for ranks that can already
	// talk to each other, over an NCCL or MPI communicator, say. Without
	// the store, a rank learns of a lost peer from the peers' status
	// words, the Timeout or Abort, unless Rendezvous is also a
	// FailureDetector. WorldSize and Rank must then be set too.
	Rendezvous Rendezvous `json:"-"`

	// Hosts splits the WorldSize ranks into this many hosts of
	// WorldSize/Hosts ranks each, numbered host-major: rank r is local
	// rank r % (WorldSize/Hosts) of host r / (WorldSize/Hosts). The ranks
	// of a host talk through the backend; the hosts, through Interconnect,
	// which must then be set. The ranks per host must be a power of two,
	// so that the tree over all ranks is a tree over the hosts' trees
	// (other counts are refused: the results would not be the flat
	// tree's). 0 or 1: one host. The cpu backend only, for now.
	Hosts int `json:"hosts,omitempty"`
	// Interconnect carries what goes between hosts (Hosts > 1).
	Interconnect Interconnect `json:"-"`

	// Capacity is the largest input of one call, in bytes per rank (for
	// ReduceScatter the whole input; for the *Many calls the sum of the
	// inputs, each rounded up to 64 bytes). Each rank holds this much
	// staging memory (cuda: up to twice as much device memory, 1.5x at
	// W=2, for the large calls' push path, plus a few MiB). 0 means DefaultCapacity.
	Capacity int64 `json:"capacity"`
	// Timeout bounds every wait for peers inside a call. 0 means
	// DefaultTimeout.
	Timeout time.Duration `json:"timeout"`

	// Device is the CUDA device of this rank for the cuda backend (an
	// ordinal after CUDA_VISIBLE_DEVICES). 0 (unset) and -1 both mean the
	// local rank (LOCAL_RANK and its Open MPI and Slurm equivalents, 0
	// without a launcher), which puts each rank of a host on a GPU of its
	// own (the local rank is read with WorldSize, so it is 0 when WorldSize
	// is set by hand); a positive value is that device. To put a rank whose
	// local rank is not 0 on device 0, narrow CUDA_VISIBLE_DEVICES instead.
	// The cpu backend ignores it.
	Device int `json:"device"`

	// Logger receives a few records: at Open, Close and failure, never per
	// call. nil discards them.
	Logger *slog.Logger `json:"-"`
}

func (o Options) withDefaults() (Options, error) {
	o, _, err := o.Resolve()
	return o, err
}

// Resolve returns o as Open completes it: Backend, Capacity, Timeout and
// Logger defaulted; WorldSize, Rank, Addr and Secret from the launcher's
// environment (detcoll run, torchrun, Open MPI, Slurm) where WorldSize is
// 0, and a single rank where no launcher is found; Secret from
// DETCOLL_SECRET where still empty; Device 0 or -1 as the local rank. It
// also returns the local ranks the launcher gave. Code that must agree
// with every rank before Open (an engine's own transport: package nccl)
// starts from it.
func (o Options) Resolve() (Options, LocalRanks, error) {
	if o.Backend == "" {
		o.Backend = "cpu"
	}
	if o.Capacity == 0 {
		o.Capacity = DefaultCapacity
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	local := LocalRanks{Rank: -1}
	if o.WorldSize == 0 {
		job, found, err := jobenv.FromEnv(os.Getenv)
		if err != nil {
			return o, local, fmt.Errorf("%w: %w", base.ErrInvalid, err)
		}
		if found {
			o.WorldSize, o.Rank = job.World, job.Rank
			local = LocalRanks{WorldSize: job.LocalWorld, Rank: job.LocalRank}
			if o.Addr == "" {
				o.Addr = job.Addr
			}
			if o.Secret == "" {
				o.Secret = job.Secret
			}
		} else {
			o.WorldSize, o.Rank = 1, 0
		}
	}
	if o.Secret == "" {
		o.Secret = settings.Get(settings.Secret)
	}
	if o.Device == 0 || o.Device == -1 {
		o.Device = max(local.Rank, 0)
	}
	return o, local, nil
}

func (o Options) validate() error {
	switch {
	case o.Backend != "cpu" && o.Backend != "cuda":
		return base.Invalidf("Options.Backend %q: want \"cpu\" or \"cuda\"", o.Backend)
	case o.WorldSize < 1:
		return base.Invalidf("Options.WorldSize %d: want >= 1", o.WorldSize)
	case o.Rank < 0 || o.Rank >= o.WorldSize:
		return base.Invalidf("Options.Rank %d: want [0, %d)", o.Rank, o.WorldSize)
	case o.Capacity < 0:
		return base.Invalidf("Options.Capacity %d: want >= 0", o.Capacity)
	case o.Device < 0:
		return base.Invalidf("Options.Device %d: want >= -1", o.Device)
	case o.Timeout < 0:
		return base.Invalidf("Options.Timeout %v: want >= 0", o.Timeout)
	case o.Hosts < 0 || o.Hosts > 1 && o.WorldSize%o.Hosts != 0:
		return base.Invalidf("Options.Hosts %d: want a divisor of WorldSize %d", o.Hosts, o.WorldSize)
	case o.Hosts > 1 && o.Interconnect == nil:
		return base.Invalidf("Options.Hosts %d: several hosts need Options.Interconnect", o.Hosts)
	case o.Hosts > 1 && o.Backend == "cuda" && !movesDeviceMemory(o.Interconnect):
		return base.Invalidf("Options.Hosts %d with the cuda backend: the Interconnect must move device memory (package nccl's does; %T does not)", o.Hosts, o.Interconnect)
	case o.Hosts > 1 && o.Rendezvous != nil:
		return base.Invalidf("Options.Rendezvous with Hosts %d: across hosts the setup rides on Options.Interconnect; leave Rendezvous nil", o.Hosts)
	case o.Hosts > 1:
		// The interconnect's channels: no address or secret to check.
	case o.Rendezvous != nil:
		// The caller's own channel: no address or secret to check.
	case o.WorldSize > 1 && o.Addr == "":
		return base.Invalidf("Options.Addr: no rendezvous address for %d ranks (set it, or DETCOLL_ADDR, or MASTER_ADDR and MASTER_PORT)", o.WorldSize)
	case o.WorldSize > 1 && o.Secret == "":
		return base.Invalidf("Options.Secret: no job secret for %d ranks (set it or DETCOLL_SECRET; detcoll run sets it)", o.WorldSize)
	}
	return nil
}

// movesDeviceMemory reports whether ic can carry the cuda backend's rails.
func movesDeviceMemory(ic Interconnect) bool {
	_, ok := ic.(DeviceInterconnect)
	return ok
}
