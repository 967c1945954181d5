// Package proto is detcoll's synchronisation protocol (contract section 4)
// as a pure model: the steps of each kind of call, the words ranks publish
// and wait for, how a wait ends (progress, a failure, the deadline) and who
// is to blame, and the codecs of the status and signature words. It is
// written once here and executed by the backends: internal/cpu runs a
// call's Schedule over shared memory and ends every wait with Decide;
// internal/cuda derives its launches' flags from the same Schedule and its
// kernels' constants from this package (cuda/kernels/proto.h is generated
// from it by go generate).
//
// Like etcd raft's state machine, it does no I/O: no clocks, no memory
// shared with other processes, no goroutines. The backends observe their
// peers' words and the time and pass what they saw in (Observation); the
// model answers with what to do (Step, Verdict). That is what makes the
// failure rules testable one race at a time (testdata/*.txt, run by
// datadriven).
//
// It owns: Word, Phase, Action, Step, Schedule, Observation, Verdict,
// Decide, Prevails, the status word and the signature words. It imports
// only internal/base (errors, signatures, failures) and internal/num; it
// must never import os, net, time, sync, unsafe, "C", or a backend.
package proto
