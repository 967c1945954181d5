// Package nccl runs a detcoll communicator of the cuda backend across
// hosts over NCCL: the ranks of a host talk through detcoll's cuda backend
// (CUDA IPC), the hosts through NCCL (detcoll.Options.Hosts,
// detcoll.Interconnect). In a job started by detcoll run, torchrun or srun:
//
//	o, err := nccl.Options(ctx, detcoll.Options{Backend: "cuda"})
//	c, err := detcoll.Open(ctx, o)
//	... c.AllReduceDevice(...) ...
//	c.Close(ctx) // closes the NCCL communicators too
//
// NCCL moves bytes only (its all-gather; its reductions are never used), so
// the sums are detcoll's tree over all ranks, bit for bit the results of one
// host of as many ranks (internal/backend/hier: the schedule and why).
//
// # Hosts
//
// The ranks of a host must be numbered consecutively, with the same number
// on every host, a power of two: the launcher's LOCAL_WORLD_SIZE, checked
// against the ranks' host names. DETCOLL_VIRTUAL_HOSTS=H instead splits the
// ranks into H hosts of consecutive ranks and gives each its own NCCL host
// identity (NCCL_HOSTID), so that NCCL takes them for hosts of their own
// and goes through its network transport: that is how one machine, even
// one GPU, runs several hosts (with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1,
// NCCL's socket transport over loopback).
//
// # Setup and failures
//
// The ranks meet at detcoll's rendezvous store (rank 0 hosts it at the
// job's address, as Open does), which gives every rank of the world its
// failure detector: a rank that fails or dies fails every rank's
// communicator, on every host. Each rail (the ranks of one local rank, one
// per host) has two NCCL communicators: one for the data, queued on the
// caller's streams, and one for each call's signatures, which the hosts
// compare on the host before anything is queued, so that a call on its own
// never waits for earlier calls' GPU work. A lost peer (the store), an
// NCCL asynchronous error or the communicator's Abort aborts both
// (ncclCommAbort), so that no NCCL kernel spins on a host that is gone.
// Every wait of the setup is bounded by Options.Timeout and ends when a
// rank fails; ncclCommInitRank itself cannot be interrupted, so its thread
// is left behind, and a communicator it brings up late is aborted. The
// abort is bounded too (2 s): a failure reaches the caller even when
// ncclCommAbort does not return (seen on one GPU shared by a dying
// process); freeing device memory may then wait for NCCL's kernels.

// Calls across hosts may be captured into CUDA graphs: each checks its
// signature against the other hosts' on the device, through a fixed-size
// all-gather on the rail's data communicator (internal/backend/hier). As
// with NCCL itself, every rank must then replay the same graphs in the
// same order; a rank that does not gets a *MismatchError or, when its
// peers wait for a call it never makes, a *TimeoutError, on every rank.
// With four or more hosts, a power of two, the
// rail halves through NCCL's send and receive (the bandwidth-optimal
// share); otherwise it gathers (internal/backend/hier's doc has the bytes). Only
// two hosts, gathering, have run on a GPU.
//
// # Imports
//
// It is built on the public API: the root package (Options.Resolve, the
// job's rendezvous through JoinJob, the public errors), plus
// internal/core/settings (its variable), internal/binding/driver and
// internal/binding/nccl (the dlopen binding of NCCL). The library never
// imports it: a program that wants the cuda backend across hosts does.
package nccl
