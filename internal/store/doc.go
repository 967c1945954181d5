// Package store is detcoll's rendezvous: a small authenticated TCP key-value
// store hosted by rank 0, which is also the job's failure detector.
//
// # Why it exists
//
// Before ranks can share memory they must exchange names and handles
// (shared-memory names, CUDA IPC handles, later NCCL unique ids) and agree
// that every rank is present. The store carries these small values (up to
// 64 KiB each) with Set, Get (which waits on the server until the key exists),
// Barrier and AllGather. It is used at setup and teardown, not per operation.
//
// # Failure model
//
// Every rank, rank 0 included, holds one TCP connection to the server for
// the life of the job. A rank leaves cleanly only by Client.Close, which sends
// a goodbye and waits for its acknowledgement. The job fails, once, at the
// first of:
//
//   - a rank's connection ends without a goodbye (crash, kill -9, a reset,
//     a protocol error): the kernel closes the socket of a dead process, so
//     the server sees it at once;
//   - a rank calls Client.Fail(reason);
//   - the server goes away (rank 0's process dies, or Server.Close runs while
//     ranks are connected): every client sees this as the failure of rank 0.
//
// A clean end is therefore: a Barrier, Client.Close on every rank, and on
// rank 0 Server.Shutdown, which waits for every goodbye before closing (a
// plain Server.Close would cut off slower ranks, who would see rank 0 lost).
//
// The server pushes the first cause to every connected rank without delay;
// each client closes its Done channel and every pending and later call
// returns the cause, a *PeerError matching ErrPeerLost. A rank that connects
// after the failure gets the cause from Dial. Detection takes a few
// milliseconds on one host (goal: well under a second). A host that vanishes
// without closing its sockets is found by TCP keepalive, in seconds.
//
// # Protocol
//
// Frames are a big-endian u32 body length (at most 1 MiB, checked before
// allocating), one type byte and the type's fields; see wire.go. A
// connection starts with a mutual HMAC-SHA256 challenge-response over the
// per-job secret, bound to rank and world size; the secret never travels.
// See auth.go. Nothing is encrypted: the secret keeps strangers and stale jobs
// out, it does not hide the values.
//
// The package never logs.
package store
