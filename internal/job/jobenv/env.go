package jobenv

import (
	"fmt"
	"strconv"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// The variables FromEnv reads. Job.Environ writes the torchrun ones and
// envSecret.
const (
	envRank       = "RANK"
	envWorld      = "WORLD_SIZE"
	envLocalRank  = "LOCAL_RANK"
	envLocalWorld = "LOCAL_WORLD_SIZE"
	envMasterAddr = "MASTER_ADDR"
	envMasterPort = "MASTER_PORT"
	envAgentStore = "TORCHELASTIC_USE_AGENT_STORE"
	envRunID      = "TORCHELASTIC_RUN_ID"

	envOMPIRank       = "OMPI_COMM_WORLD_RANK"
	envOMPIWorld      = "OMPI_COMM_WORLD_SIZE"
	envOMPILocalRank  = "OMPI_COMM_WORLD_LOCAL_RANK"
	envOMPILocalWorld = "OMPI_COMM_WORLD_LOCAL_SIZE"
	envPMIxNamespace  = "PMIX_NAMESPACE"
	envOMPIJobID      = "OMPI_MCA_ess_base_jobid"

	envSlurmRank      = "SLURM_PROCID"
	envSlurmWorld     = "SLURM_NTASKS"
	envSlurmLocalRank = "SLURM_LOCALID"
	envSlurmNodeID    = "SLURM_NODEID"
	envSlurmJobID     = "SLURM_JOB_ID"
	envSlurmStepID    = "SLURM_STEP_ID"

	envAddr   = settings.Addr
	envSecret = settings.Secret
)

// Job.Source values.
const (
	SourceTorchrun = "torchrun"
	SourceEnv      = "RANK/WORLD_SIZE" // detcoll run, or set by hand
	SourceOpenMPI  = "openmpi"
	SourceSlurm    = "slurm"
)

// MaxWorld bounds the world sizes FromEnv accepts (and the launcher
// starts): far above any real job, low enough that a typo cannot make a
// caller size per-rank tables from it.
const MaxWorld = 1 << 20

// Job is what a rank learns from its launcher.
type Job struct {
	Rank, World           int // 0 <= Rank < World
	LocalRank, LocalWorld int // the same on this host: 0 <= LocalRank < LocalWorld <= World

	// Addr is the rendezvous host:port; rank 0 hosts the store there. It is
	// empty when the environment gives none and no default fits: the caller
	// must then have one from elsewhere, or fail.
	Addr string

	// Secret is the per-job secret every rank presents to join, from
	// DETCOLL_SECRET; empty when unset (then, as for Addr, the caller
	// decides).
	Secret string

	// Source names the launcher, for messages: "torchrun",
	// "RANK/WORLD_SIZE" (detcoll run, or set by hand), "openmpi" or "slurm".
	Source string
}

// EnvError reports a missing, malformed or inconsistent launcher variable.
type EnvError struct {
	Var string // the variable at fault, e.g. "WORLD_SIZE"
	Err error  // what is wrong with it
}

func (e *EnvError) Error() string { return "jobenv: " + e.Var + ": " + e.Err.Error() }

// Unwrap returns e.Err.
func (e *EnvError) Unwrap() error { return e.Err }

func envErrorf(name, format string, args ...any) error {
	return &EnvError{Var: name, Err: fmt.Errorf(format, args...)}
}

// setting is one variable and its value; "" means unset, as getenv cannot
// tell an empty variable from a missing one.
type setting struct{ name, value string }

// FromEnv decodes the launcher's variables, read through getenv (os.Getenv
// in production; a map lookup in tests).
//
// The first source whose marker is set is used; the others are ignored:
//
//   - RANK or WORLD_SIZE: torchrun and detcoll run. LOCAL_RANK and
//     LOCAL_WORLD_SIZE come as a pair; without them the job is taken to be
//     on one host.
//   - OMPI_COMM_WORLD_RANK or OMPI_COMM_WORLD_SIZE: Open MPI (mpirun), with
//     OMPI_COMM_WORLD_LOCAL_RANK and OMPI_COMM_WORLD_LOCAL_SIZE.
//   - SLURM_PROCID: a task of srun. SLURM_NTASKS is the world and
//     SLURM_LOCALID the local rank. The local world is the step's own layout,
//     SLURM_STEP_TASKS_PER_NODE at index SLURM_NODEID (such lists read
//     "2(x3),1"); failing that SLURM_NTASKS_PER_NODE, then
//     SLURM_TASKS_PER_NODE at SLURM_NODEID. The step comes first because
//     the others may be inherited from an sbatch or salloc that asked for
//     more tasks than this srun starts. SLURM_NTASKS alone is no marker: an
//     salloc shell or batch script has it too, and is not a rank.
//
// The rendezvous address is the first of these that applies:
//
//  1. DETCOLL_ADDR (host:port) overrides everything.
//  2. MASTER_ADDR and MASTER_PORT, both or neither. Under torchrun's agent
//     store (TORCHELASTIC_USE_AGENT_STORE=True) torchrun's own TCPStore
//     already listens on MASTER_PORT on rank 0's host, so rank 0 could not
//     bind it: the address is MASTER_ADDR:MASTER_PORT+1.
//  3. For a world of one, unused: 127.0.0.1:29500.
//  4. RANK/WORLD_SIZE with more ranks: none (""), as torch.distributed
//     would not guess one either (torchrun always sets MASTER_ADDR and
//     MASTER_PORT).
//  5. Open MPI or Slurm with ranks on several hosts (local world below the
//     world): none (""); they need rule 1 or 2.
//  6. Open MPI or Slurm, all ranks on one host: 127.0.0.1, port 29500 + 1 +
//     (FNV-1a of the job's id mod 1000). The id (SLURM_JOB_ID.SLURM_STEP_ID,
//     or PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid) is the same on every
//     rank and differs between jobs, so that concurrent jobs on a host seldom
//     collide; without an id the port is 29500.
//
// The secret is DETCOLL_SECRET. detcoll run sets one; under other launchers
// export one to every rank. FromEnv does not demand an address or a secret,
// which the caller may have from elsewhere: only what is set must be right.
//
// found reports whether any source's marker was set, also when err != nil;
// when it is false the process is a single rank, job is zero and err is nil.
// err is an [*EnvError] naming the variable that is missing, malformed or
// inconsistent with the others. FromEnv is a pure function of getenv.
func FromEnv(getenv func(string) string) (job Job, found bool, err error) {
	get := func(name string) setting { return setting{name, getenv(name)} }
	switch {
	case getenv(envRank) != "" || getenv(envWorld) != "":
		job.Source = SourceEnv
		if getenv(envRunID) != "" {
			job.Source = SourceTorchrun
		}
		err = job.decode(get(envRank), get(envWorld), get(envLocalRank), get(envLocalWorld))
	case getenv(envOMPIRank) != "" || getenv(envOMPIWorld) != "":
		job.Source = SourceOpenMPI
		err = job.decode(get(envOMPIRank), get(envOMPIWorld), get(envOMPILocalRank), get(envOMPILocalWorld))
	case getenv(envSlurmRank) != "":
		job.Source = SourceSlurm
		var local setting
		if local, err = slurmLocalWorld(getenv); err == nil {
			err = job.decode(get(envSlurmRank), get(envSlurmWorld), get(envSlurmLocalRank), local)
		}
	default:
		return Job{}, false, nil
	}
	if err == nil {
		job.Addr, err = jobAddr(getenv, job)
	}
	if err != nil {
		return Job{}, true, err
	}
	job.Secret = getenv(envSecret)
	return job, true, nil
}

// decode fills the rank fields from the global and the local pair. Without
// a local pair the job is taken to be on one host.
func (j *Job) decode(rank, world, localRank, localWorld setting) error {
	var err error
	if j.Rank, j.World, err = decodePair(rank, world); err != nil {
		return err
	}
	if localRank.value == "" && localWorld.value == "" {
		j.LocalRank, j.LocalWorld = j.Rank, j.World
		return nil
	}
	if j.LocalRank, j.LocalWorld, err = decodePair(localRank, localWorld); err != nil {
		return err
	}
	if j.LocalWorld > j.World {
		return envErrorf(localWorld.name, "%d exceeds the world size %s=%d", j.LocalWorld, world.name, j.World)
	}
	return nil
}

// decodePair decodes a rank and a size that must come together, with
// 0 <= rank < size <= MaxWorld.
func decodePair(rank, size setting) (r, n int, err error) {
	switch {
	case size.value == "":
		return 0, 0, envErrorf(size.name, "not set, but %s is", rank.name)
	case rank.value == "":
		return 0, 0, envErrorf(rank.name, "not set, but %s is", size.name)
	}
	if n, err = atoi(size); err != nil {
		return 0, 0, err
	}
	if n < 1 || n > MaxWorld {
		return 0, 0, envErrorf(size.name, "%d is not in [1, %d]", n, MaxWorld)
	}
	if r, err = atoi(rank); err != nil {
		return 0, 0, err
	}
	if r < 0 || r >= n {
		return 0, 0, envErrorf(rank.name, "%d is not in [0, %s=%d)", r, size.name, n)
	}
	return r, n, nil
}

// atoi parses a decimal integer as strconv.Atoi does: no spaces, no base prefix.
func atoi(s setting) (int, error) {
	n, err := strconv.Atoi(s.value)
	if err != nil {
		return 0, envErrorf(s.name, "%q is not an integer", s.value)
	}
	return n, nil
}
