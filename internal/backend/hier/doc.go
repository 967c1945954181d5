// Package hier runs every collective over several hosts: a communicator
// of W = H x G ranks, numbered host-major (rank r is local rank r % G on
// host r / G), made of the host's own communicator (a backend: shared
// memory, CUDA IPC) and rails between the hosts (the ranks of one local
// rank, one per host), whose bytes move through an existing engine (Open
// MPI, NCCL) behind the Rail interface.
//
// # Why the bits are the flat tree's
//
// With G a power of two, T over W ranks is T over H leaves of T over each
// host's G ranks: T splits [0, HG) at the largest power of two below HG,
// which is G times the largest power of two below H, so every split falls
// between hosts until one host is left. So an all-reduce is: a
// reduce-scatter inside the host (each local rank holds its shard of the
// host's sum, T over the host's ranks), an all-gather of that shard along
// the rail and T over the H host sums, element by element, then an
// all-gather inside the host. Every node is the add the flat tree makes,
// on the same operands in the same order, rounded once: the bits are the
// flat tree's (hier_test.go checks it against the flat reference and
// against one host of W ranks). With G not a power of two the flat tree
// does not nest; New refuses it (ErrInvalid), rather than run a schedule
// whose result would differ from a single host's.
//
// # One schedule, two executors
//
// The steps of each call (which buffer goes where, through the host's
// communicator, along the rail, or into T over the hosts) are written once,
// in internal/core/proto (HostSchedule, with script tests and a simulator that
// checks every output against the flat tree as an expression). This
// package executes them: over byte slices (run.go) or queued on the
// call's stream over device addresses (device.go).
//
// # Bytes
//
// Per rank and all-reduce of n bytes: inside the host a reduce-scatter and
// an all-gather, 2(G-1)/G n each way. Along the rail, with H a power of
// two and a Rail that is an Exchanger, recursive halving at distances 1,
// 2, 4, ... (each step adds two of T's subtrees, the lower hosts' on the
// left) then doubling back: 2(H-1)/H n/G each way, the bandwidth optimum
// for n/G over H hosts. Otherwise an all-gather of the shards, after which
// every rank evaluates T over the H host sums itself: (H-1) n/G, H/2 times
// the optimum. Either way no engine adds anything, so the order is T's.
// A reduce-scatter halves the same way (its blocks ordered so that each
// rank ends with its own): (H-1)/H of its rail's share, the optimum;
// without halving it gathers every host's partials of its rail's H blocks
// and keeps one, H times more. All-gather moves what it must. Broadcast
// gathers along the root's rail, so each of its ranks receives H-1 copies
// of the buffer where one would do: simple, and fine for the small buffers
// broadcast carries; a tree of Exchanges would move one.
//
// # Device memory
//
// When the host's communicator takes device memory (the cuda backend, a
// DeviceLocal) the schedule is the same, queued on the call's stream
// (device.go): the host's reduce-scatter, the rail's all-gather
// (DeviceRail: NCCL's), T over the host sums by a kernel of the backend
// (treesum.cu), the host's all-gather; with one rank per host the host's
// calls are copies and are left out (on host memory too). With a power of
// two of hosts and a rail that is a DeviceExchanger (NCCL's send and
// receive), a reduce-scatter halves as the host path does, receiving its
// (H-1)/H share (at two hosts, half of what gathering moves), and so does
// an all-reduce from four hosts on: 2(H-1)/H n/G per rank, the optimum.
// Otherwise it gathers: an all-reduce (H-1) n/G, the optimum for two hosts
// (where the gathering path is the one that ran on a GPU), H/2 times it
// beyond; a reduce-scatter H times its share.
//
// Each device call first checks its signature on the device: the host's
// communicator writes it (DeviceLocal.SignRail, its sequence counted on
// the device), the rail gathers every host's (a fixed 56 bytes each, so
// that hosts making different calls cannot hang there), and a kernel
// compares them (CheckRail). Nothing waits on the host, so a call across
// hosts can be captured in a CUDA graph, and each replay is checked as an
// eager call is. Scratch that a graph may use is kept till Close.
//
// # Failures
//
// On host memory each call first gathers its signature from every host
// (meet), so that hosts calling different collectives fail with a
// *MismatchError before any output is written. On device memory the
// check runs on the stream: a mismatch fails every rank with a
// *MismatchError once the check has run (the cuda backend's monitor reads
// it, tells every rank and the rails are aborted), reported at the next
// call or Synchronize, as a mismatch found by a kernel within a host is;
// the mismatched call's output may have been written by then. A gather of
// signatures that does not end within the timeout (a host skipped a call)
// is a *TimeoutError, found by the same monitor. Close meets along the
// rail on the host. A wait for the rail is bounded by the
// timeout and ends at once when the communicator fails (Abort); any
// failure poisons the communicator and aborts the host's, so that its
// local peers fail at once with the same cause. A rank waiting on the rail
// learns of a local peer's failure only at its timeout: the host's
// communicator does not signal one.
//
// It imports internal/core/base, internal/core/num, internal/core/proto (the schedule and
// the signature words) and internal/core/tree; the backends and the engines come in as interfaces.
package hier
