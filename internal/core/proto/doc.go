// Package proto is detcoll's synchronisation protocol (contract section 4)
// as a pure model: the steps of each kind of call, the words ranks publish
// and wait for, how a wait ends (progress, a failure, the deadline) and who
// is to blame, and the codecs of the status and signature words. It is
// written once here and executed by the backends: internal/backend/cpu runs a
// call's Schedule over shared memory and ends every wait with Decide;
// internal/backend/cuda runs the same Schedule as kernel launches, cut by
// Launches (testdata/launches.txt), each launch a table of the kernels'
// primitives that the kernel executes in order (its steptable.go), and
// writes this package's phases, status-word layout and
// signature size into the kernels' generated header (kernels/proto.h). The
// GPU-only paths (LL, Push, PushScatter, Alone, Registered) and words (Sent1, Sent2) are
// described here too, so that every path of the protocol has one written
// schedule.
//
// Like etcd raft's state machine, it does no I/O: no clocks, no memory
// shared with other processes, no goroutines. The backends observe their
// peers' words and the time and pass what they saw in (View); the
// model answers with what to do (Step, Verdict). That is what makes the
// failure rules testable one race at a time: testdata/*.txt script single
// waits and the codecs, testdata/sim/*.txt whole jobs of ranks that a
// simulator (sim_test.go) steps through their schedules in scripted
// interleavings, with kills, deadlines and the rendezvous's notices
// (datadriven; -rewrite regenerates, diffs get reviewed).
//
// It also holds the schedule of a call across hosts (hosts.go: HostSchedule,
// a two-level schedule of the host's communicator and the rails, which
// package hier executes over host or device memory), checked by
// testdata/hosts.txt and by a simulator that evaluates every rank's steps
// as expressions against the flat tree (hosts_sim_test.go).
//
// It owns: Word, Phase, Path, Action, Step, Schedule, Launches, View, Wait, Verdict,
// Decide, Prevails, the status word, the signature words, ChoosePath (which
// path a call takes, per engine: testdata/path.txt), and HostCall,
// HostStep and HostSchedule. It imports
// only internal/core/base (errors, signatures, failures) and internal/core/num; it
// must never import os, net, time, sync, unsafe, "C", or a backend.
package proto
