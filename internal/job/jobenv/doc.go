// Package jobenv tells a rank who it is: [FromEnv] decodes the environment
// a launcher gave a process into a [Job] (rank, world size, local rank and
// size, the rendezvous address that rank 0 serves, the job's secret). It
// understands, in this order of precedence, the variables of torchrun
// (which detcoll run sets too), Open MPI and Slurm. A process that none of
// them started is a single rank: FromEnv reports found == false and the
// caller runs with a world of one.
//
// The other direction is for launchers: [Job.Environ] writes the variables
// that FromEnv reads back as the same Job, and [Strip] removes from an
// environment everything that would mislead FromEnv in a child.
//
// # Imports
//
// It is a pure function of the environment it is handed: it imports only
// the standard library, and never os/exec, the store, the launcher or
// anything of the module. The library (detcoll.Open reads its Options
// from here) imports it; the process supervisor, internal/job/launch, must
// not be imported by the library, so what both need lives here.
//
// # Errors
//
// A missing, malformed or inconsistent variable is an [*EnvError] naming
// it. Its text is not API.
package jobenv
