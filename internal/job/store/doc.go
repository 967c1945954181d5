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
//   - a rank of this machine is exiting or gone, by its process
//     (procwatch.go: every 50 ms, even while its teardown holds its sockets
//     open);
//   - a rank says nothing for the silence limit (every end pings every
//     100 ms; 5 s within a machine, 900 ms from another,
//     DETCOLL_STORE_SILENCE for both): a stopped process, a vanished host,
//     or a killed one whose teardown holds its sockets open (liveness.go);
//     a silent server is the failure of rank 0;
//   - a rank calls Client.Fail(reason);
//   - the server goes away (rank 0's process dies, or Server.Close runs while
//     ranks are connected): every client sees this as the failure of rank 0;
//   - the job's launcher reports that a rank died (Report): the one way to
//     hear of a rank that died before it joined. The launcher knows the
//     secret and authenticates as rank == world, the one extra member; when
//     nothing listens (rank 0 died first), it hosts a store at the address
//     that is failed from the start (Tombstone) and tells each rank why.
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
// without closing its sockets is found by its silence, or TCP keepalive.
//
// # Protocol
//
// Frames are a big-endian u32 body length, one type byte and the type's
// fields; see wire.go. A connection starts with a mutual HMAC-SHA256
// challenge-response over the per-job secret, bound to rank and world size;
// the secret never travels. See auth.go. Nothing is encrypted: the secret
// keeps strangers and stale jobs out, it does not hide the values.
//
// A length over the reader's limit is refused from the header alone, before
// anything is allocated. The limit is 1 MiB once the peer has proved the
// secret, and before that the size of the largest handshake frame the
// reader expects: 74 bytes (the hello) on the server, 1,066 bytes (a
// welcome carrying a 1 KiB failure reason) on a client. Every reason a
// frame carries is cut to 1 KiB.
//
// So a peer that has not proved the secret costs the server little, and
// not for long:
//
//   - at most 2*world + 32 handshakes are pending at once; a connection
//     beyond that is closed before the challenge, and Dial retries it as it
//     retries a refused connection;
//   - a handshake ends 10 s after its connection was accepted, however
//     slowly the peer sends, which frees its slot;
//   - a pending connection holds its goroutine, the challenge and at most a
//     hello-sized frame: the server reads the hello unbuffered and gives the
//     connection a read buffer only once the rank has joined.
//
// A stranger that fills every pending slot delays ranks by at most the
// handshake's 10 s, unless it keeps reconnecting: against whoever can reach
// the port, the store bounds its memory, not its availability.
//
// The package never logs.
//
// # Imports
//
// It imports the standard library only, nothing of the module: the root
// package opens it and hands it to the backends as a base.Rendezvous, and
// the launcher imports it to report deaths. It must never import the root
// package, a backend or a tool's package.
package store
