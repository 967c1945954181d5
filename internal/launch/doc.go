// Package launch tells a rank who it is and starts the ranks of a local job.
//
// # Discovery
//
// [FromEnv] decodes the environment a launcher gave a process into a [Job]:
// rank, world size, local rank and size, the rendezvous address that rank 0
// serves, and the job's secret. It understands, in this order of precedence,
// the variables of torchrun (which [Run] sets too), Open MPI and Slurm. A
// process that none of them started is a single rank: FromEnv reports
// found == false and the caller runs with a world of one.
//
// # Launching
//
// [Run] is "detcoll run": like torchrun --standalone, it starts N copies of a
// program on this host, each with the variables FromEnv reads, a free
// loopback port and a fresh secret. It waits for all of them. When one rank
// fails, the others get a grace period ([Config].ReportGrace, 2 s) to report
// and exit on their own; then it stops those left and returns a [*RankError]
// naming the first that failed and how every rank ended. When its context
// ends it stops them all at once and returns the context's error. No rank
// outlives Run.
//
// # Errors
//
// Bad input is reported before any work, as a [*EnvError] naming the variable
// or a [*ConfigError] naming the Config field. Their text is not API.
package launch
