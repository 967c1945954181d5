// Package launch is the process supervisor behind "detcoll run": it
// starts the ranks of a local job and sees them to their end.
//
// # Launching
//
// [Run] is "detcoll run": like torchrun --standalone, it starts N copies of a
// program on this host, each with the variables jobenv.FromEnv reads, a
// free loopback port and a fresh secret. It waits for all of them. When one
// rank fails, the others get a grace period ([Config].ReportGrace, 2 s) to
// report and exit on their own; then it stops those left and returns a
// [*RankError] naming the first that failed and how every rank ended. A
// rank that dies is reported to the job's rendezvous store at once, so
// that its peers need not wait for a timeout. When its context ends it
// stops them all at once and returns the context's error. No rank outlives
// Run.
//
// # Imports
//
// Who a rank is (the environment a launcher sets) belongs to
// internal/job/jobenv, which this package uses to write it; the store is
// imported to report deaths. It never imports the root package or a
// backend: it supervises any program and knows nothing of collectives.
// The library (the root package and its backends) must never import this
// package: it starts processes and handles signals, which a library must
// not do.
//
// # Errors
//
// Bad input is reported before any work, as a [*ConfigError] naming the
// Config field. Its text is not API.
package launch
