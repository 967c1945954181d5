//go:build cgo && linux

package nccl

/*
#include <stddef.h>
#include <stdint.h>

// NCCL's types, declared here so that no nccl.h is needed. Handles
// (ncclComm_t, cudaStream_t) are pointers held as uintptr_t, as in cudrv.h;
// enums are ints; ncclUniqueId is a 128-byte struct passed by value.
typedef int dcn_result;
typedef struct { char internal[128]; } dcn_uid;

// DCN_NOT_LOADED is what a shim returns when its symbol is not resolved;
// NCCL's own codes are never negative.
#define DCN_NOT_LOADED (-1)

// Symbols in resolution order. Those before DCN_REQUIRED must resolve;
// ncclGetLastError (NCCL 2.13 and later) and the PreMulSum operators'
// (2.11 and later) are optional.
enum {
  DCN_GetVersion, DCN_GetUniqueId, DCN_CommInitRank, DCN_CommDestroy, DCN_CommAbort,
  DCN_AllReduce, DCN_ReduceScatter, DCN_AllGather, DCN_Broadcast, DCN_GroupStart,
  DCN_GroupEnd, DCN_GetErrorString, DCN_CommGetAsyncError, DCN_Send, DCN_Recv,
  DCN_REQUIRED,
  DCN_GetLastError = DCN_REQUIRED,
  DCN_RedOpCreatePreMulSum, DCN_RedOpDestroy,
  DCN_COUNT
};

static const char* const dcn_names[DCN_COUNT] = {
  "ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclCommDestroy", "ncclCommAbort",
  "ncclAllReduce", "ncclReduceScatter", "ncclAllGather", "ncclBroadcast", "ncclGroupStart",
  "ncclGroupEnd", "ncclGetErrorString", "ncclCommGetAsyncError", "ncclSend", "ncclRecv", "ncclGetLastError",
  "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy",
};

// Filled by Load (under its mutex) and read by the shims.
static void* dcn_slots[DCN_COUNT];

static int dcn_count(void) { return DCN_COUNT; }
static int dcn_required(void) { return DCN_REQUIRED; }
static const char* dcn_name(int i) { return dcn_names[i]; }
static void dcn_set(int i, void* p) { dcn_slots[i] = p; }
static void dcn_clear(void) {
  for (int i = 0; i < DCN_COUNT; i++) dcn_slots[i] = NULL;
}

static dcn_result dcn_getVersion(int* v) {
  dcn_result (*f)(int*) = (dcn_result (*)(int*))dcn_slots[DCN_GetVersion];
  return f ? f(v) : DCN_NOT_LOADED;
}

static dcn_result dcn_getUniqueId(dcn_uid* id) {
  dcn_result (*f)(dcn_uid*) = (dcn_result (*)(dcn_uid*))dcn_slots[DCN_GetUniqueId];
  return f ? f(id) : DCN_NOT_LOADED;
}

static dcn_result dcn_commInitRank(uintptr_t* comm, int n, const dcn_uid* id, int rank) {
  dcn_result (*f)(uintptr_t*, int, dcn_uid, int) =
      (dcn_result (*)(uintptr_t*, int, dcn_uid, int))dcn_slots[DCN_CommInitRank];
  return f ? f(comm, n, *id, rank) : DCN_NOT_LOADED;
}

static dcn_result dcn_comm(int which, uintptr_t comm) {
  dcn_result (*f)(uintptr_t) = (dcn_result (*)(uintptr_t))dcn_slots[which];
  return f ? f(comm) : DCN_NOT_LOADED;
}

static dcn_result dcn_group(int which) {
  dcn_result (*f)(void) = (dcn_result (*)(void))dcn_slots[which];
  return f ? f() : DCN_NOT_LOADED;
}

// The collectives take device addresses as integers (CUdeviceptr) and pass
// them to NCCL as the pointers its prototypes declare.
static dcn_result dcn_allReduce(unsigned long long send, unsigned long long recv, size_t count, int dt, int op,
                                uintptr_t comm, uintptr_t stream) {
  dcn_result (*f)(const void*, void*, size_t, int, int, uintptr_t, uintptr_t) =
      (dcn_result (*)(const void*, void*, size_t, int, int, uintptr_t, uintptr_t))dcn_slots[DCN_AllReduce];
  return f ? f((const void*)(uintptr_t)send, (void*)(uintptr_t)recv, count, dt, op, comm, stream) : DCN_NOT_LOADED;
}

static dcn_result dcn_reduceScatter(unsigned long long send, unsigned long long recv, size_t count, int dt, int op,
                                    uintptr_t comm, uintptr_t stream) {
  dcn_result (*f)(const void*, void*, size_t, int, int, uintptr_t, uintptr_t) =
      (dcn_result (*)(const void*, void*, size_t, int, int, uintptr_t, uintptr_t))dcn_slots[DCN_ReduceScatter];
  return f ? f((const void*)(uintptr_t)send, (void*)(uintptr_t)recv, count, dt, op, comm, stream) : DCN_NOT_LOADED;
}

static dcn_result dcn_allGather(unsigned long long send, unsigned long long recv, size_t count, int dt,
                                uintptr_t comm, uintptr_t stream) {
  dcn_result (*f)(const void*, void*, size_t, int, uintptr_t, uintptr_t) =
      (dcn_result (*)(const void*, void*, size_t, int, uintptr_t, uintptr_t))dcn_slots[DCN_AllGather];
  return f ? f((const void*)(uintptr_t)send, (void*)(uintptr_t)recv, count, dt, comm, stream) : DCN_NOT_LOADED;
}

static dcn_result dcn_broadcast(unsigned long long send, unsigned long long recv, size_t count, int dt, int root,
                                uintptr_t comm, uintptr_t stream) {
  dcn_result (*f)(const void*, void*, size_t, int, int, uintptr_t, uintptr_t) =
      (dcn_result (*)(const void*, void*, size_t, int, int, uintptr_t, uintptr_t))dcn_slots[DCN_Broadcast];
  return f ? f((const void*)(uintptr_t)send, (void*)(uintptr_t)recv, count, dt, root, comm, stream) : DCN_NOT_LOADED;
}

// dcn_p2p is ncclSend (which = DCN_Send) or ncclRecv: the same prototype.
static dcn_result dcn_p2p(int which, unsigned long long buf, size_t count, int dt, int peer, uintptr_t comm,
                          uintptr_t stream) {
  dcn_result (*f)(void*, size_t, int, int, uintptr_t, uintptr_t) =
      (dcn_result (*)(void*, size_t, int, int, uintptr_t, uintptr_t))dcn_slots[which];
  return f ? f((void*)(uintptr_t)buf, count, dt, peer, comm, stream) : DCN_NOT_LOADED;
}
// ncclScalarHostImmediate: the factor is read from host memory at creation.
#define DCN_SCALAR_HOST_IMMEDIATE 1
static dcn_result dcn_redOpCreatePreMulSum(int* op, void* scalar, int dt, uintptr_t comm) {
  dcn_result (*f)(int*, void*, int, int, uintptr_t) =
      (dcn_result (*)(int*, void*, int, int, uintptr_t))dcn_slots[DCN_RedOpCreatePreMulSum];
  return f ? f(op, scalar, dt, DCN_SCALAR_HOST_IMMEDIATE, comm) : DCN_NOT_LOADED;
}
static dcn_result dcn_redOpDestroy(int op, uintptr_t comm) {
  dcn_result (*f)(int, uintptr_t) = (dcn_result (*)(int, uintptr_t))dcn_slots[DCN_RedOpDestroy];
  return f ? f(op, comm) : DCN_NOT_LOADED;
}
static dcn_result dcn_commGetAsyncError(uintptr_t comm, dcn_result* async) {
  dcn_result (*f)(uintptr_t, dcn_result*) = (dcn_result (*)(uintptr_t, dcn_result*))dcn_slots[DCN_CommGetAsyncError];
  return f ? f(comm, async) : DCN_NOT_LOADED;
}
// dcn_errorString and dcn_lastError return NULL when NCCL cannot say.
static const char* dcn_errorString(dcn_result r) {
  const char* (*f)(dcn_result) = (const char* (*)(dcn_result))dcn_slots[DCN_GetErrorString];
  return f ? f(r) : NULL;
}

static const char* dcn_lastError(uintptr_t comm) {
  const char* (*f)(uintptr_t) = (const char* (*)(uintptr_t))dcn_slots[DCN_GetLastError];
  return f ? f(comm) : NULL;
}
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/detcoll/detcoll/internal/binding/dl"
	"github.com/detcoll/detcoll/internal/binding/driver"
)

// dynamicLoading reports whether this build can load NCCL at all.
const dynamicLoading = true

// lib is Load's state.
var lib struct {
	mu   sync.Mutex
	name string // the loaded NCCL, "" until Load succeeds; guarded by mu
}

// errNotLoaded is what an NCCL call returns before Load succeeds.
var errNotLoaded = fmt.Errorf("%w: NCCL not loaded (call Load first)", ErrUnavailable)

// Load makes the NCCL functions usable: it dlopens NCCL ($DETCOLL_LIBNCCL,
// else libnccl.so.2, then libnccl.so) and resolves every symbol they call.
// It is independent of the driver's Load, which never touches NCCL. It is safe for
// concurrent use; once it has succeeded, later calls return nil at once and
// NCCL stays loaded for the life of the process (NCCL starts threads that
// must not outlive its code, so it is never closed). On failure nothing is
// loaded, a later call tries again, and the error matches ErrUnavailable and
// names the library or symbol that was missing.
func Load() error {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.name != "" {
		return nil
	}
	var tried []string
	names := candidates()
	for _, name := range names {
		h, err := dl.Open(name)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		if err := resolve(h, name); err != nil {
			dl.Close(h) // nothing of it was called
			return fmt.Errorf("%w: NCCL %s: %v", ErrUnavailable, name, err)
		}
		lib.name = name
		return nil
	}
	return fmt.Errorf("%w: no NCCL found (%s): %s", ErrUnavailable, envHint(), driver.Tried(names, tried))
}

// resolve fills the symbol table from h; on failure it leaves it empty.
func resolve(h unsafe.Pointer, name string) error {
	for i := range int(C.dcn_count()) {
		p, err := dl.Sym(h, name, C.GoString(C.dcn_name(C.int(i))))
		if err != nil {
			if i >= int(C.dcn_required()) {
				continue // optional
			}
			C.dcn_clear()
			return err
		}
		C.dcn_set(C.int(i), p)
	}
	return nil
}

// Library returns the name of the NCCL that Load opened, or "".
func Library() string {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	return lib.name
}

// Version returns the loaded NCCL's version code,
// major*10000 + minor*100 + patch (22803 for 2.28.3).
func Version() (int, error) {
	var v C.int
	if r := C.dcn_getVersion(&v); r != 0 {
		return 0, ncclErr(r, 0, "ncclGetVersion")
	}
	return int(v), nil
}

// GetUniqueID returns a new ncclUniqueId: one rank calls it and sends the
// bytes to every other rank of the communicator to create.
func GetUniqueID() (UniqueID, error) {
	var id C.dcn_uid
	var out UniqueID
	if r := C.dcn_getUniqueId(&id); r != 0 {
		return out, ncclErr(r, 0, "ncclGetUniqueId")
	}
	copy(out[:], unsafe.Slice((*byte)(unsafe.Pointer(&id.internal[0])), UniqueIDBytes))
	return out, nil
}

// CommInitRank creates this rank's communicator of world ranks from the id
// rank 0 got from GetUniqueID. It is collective: it returns when
// every rank has called it. It runs on the calling thread's current device
// (see the package doc). Release the communicator with Destroy, or Abort.
func CommInitRank(world int, id UniqueID, rank int) (Comm, error) {
	const call = "ncclCommInitRank"
	if world < 1 || world > math.MaxInt32 || rank < 0 || rank >= world {
		return 0, fmt.Errorf("detcoll/nccl: %s: rank %d of a world of %d", call, rank, world)
	}
	var cid C.dcn_uid
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&cid.internal[0])), UniqueIDBytes), id[:])
	var comm C.uintptr_t
	if r := C.dcn_commInitRank(&comm, C.int(world), &cid, C.int(rank)); r != 0 {
		return 0, ncclErr(r, 0, call, world, rank)
	}
	return Comm(comm), nil
}

// Destroy frees the communicator after the work queued on it is done. Every
// rank destroys its own; use Abort instead when a peer may never come.
func (c Comm) Destroy() error {
	if r := C.dcn_comm(C.DCN_CommDestroy, C.uintptr_t(c)); r != 0 {
		return ncclErr(r, 0, "ncclCommDestroy", uintptr(c))
	}
	return nil
}

// Abort frees the communicator at once, ending its queued and running
// operations; it does not wait for peers.
func (c Comm) Abort() error {
	if r := C.dcn_comm(C.DCN_CommAbort, C.uintptr_t(c)); r != 0 {
		return ncclErr(r, 0, "ncclCommAbort", uintptr(c))
	}
	return nil
}

// AsyncError returns the error NCCL found in the communicator's work on
// its own (a peer's connection lost, say), or nil; Result InProgress while
// a nonblocking operation is still under way.
func (c Comm) AsyncError() error {
	var async C.dcn_result
	if r := C.dcn_commGetAsyncError(C.uintptr_t(c), &async); r != 0 {
		return ncclErr(r, 0, "ncclCommGetAsyncError", uintptr(c))
	}
	if async != 0 {
		return ncclErr(async, c, "ncclCommGetAsyncError", uintptr(c))
	}
	return nil
}

// AllReduce queues on s the reduction of count elements of dt at send over
// all ranks into recv (which may be send). It returns once queued.
func (c Comm) AllReduce(send, recv driver.DevicePtr, count int, dt DataType, op RedOp, s driver.Stream) error {
	const call = "ncclAllReduce"
	if count < 0 {
		return countError(call, count)
	}
	r := C.dcn_allReduce(C.ulonglong(send), C.ulonglong(recv), C.size_t(count), C.int(dt), C.int(op),
		C.uintptr_t(c), C.uintptr_t(s))
	if r != 0 {
		return ncclErr(r, c, call, send, recv, count, dt, op, uintptr(s))
	}
	return nil
}

// ReduceScatter queues on s the reduction of world*recvCount elements at
// send over all ranks, writing this rank's recvCount elements to recv.
func (c Comm) ReduceScatter(send, recv driver.DevicePtr, recvCount int, dt DataType, op RedOp, s driver.Stream) error {
	const call = "ncclReduceScatter"
	if recvCount < 0 {
		return countError(call, recvCount)
	}
	r := C.dcn_reduceScatter(C.ulonglong(send), C.ulonglong(recv), C.size_t(recvCount), C.int(dt), C.int(op),
		C.uintptr_t(c), C.uintptr_t(s))
	if r != 0 {
		return ncclErr(r, c, call, send, recv, recvCount, dt, op, uintptr(s))
	}
	return nil
}

// AllGather queues on s the gathering of every rank's sendCount elements at
// send into recv (world*sendCount elements), in rank order.
func (c Comm) AllGather(send, recv driver.DevicePtr, sendCount int, dt DataType, s driver.Stream) error {
	const call = "ncclAllGather"
	if sendCount < 0 {
		return countError(call, sendCount)
	}
	r := C.dcn_allGather(C.ulonglong(send), C.ulonglong(recv), C.size_t(sendCount), C.int(dt),
		C.uintptr_t(c), C.uintptr_t(s))
	if r != 0 {
		return ncclErr(r, c, call, send, recv, sendCount, dt, uintptr(s))
	}
	return nil
}

// Broadcast queues on s the copy of root's count elements at send into
// every rank's recv (send is read on root only).
func (c Comm) Broadcast(send, recv driver.DevicePtr, count int, dt DataType, root int, s driver.Stream) error {
	const call = "ncclBroadcast"
	if count < 0 {
		return countError(call, count)
	}
	if root < 0 || root > math.MaxInt32 {
		return fmt.Errorf("detcoll/nccl: %s: root %d", call, root)
	}
	r := C.dcn_broadcast(C.ulonglong(send), C.ulonglong(recv), C.size_t(count), C.int(dt), C.int(root),
		C.uintptr_t(c), C.uintptr_t(s))
	if r != 0 {
		return ncclErr(r, c, call, send, recv, count, dt, root, uintptr(s))
	}
	return nil
}

// CreatePreMulSum makes NCCL's pre-multiplied sum on c for dt, with this
// rank's factor scalar: one element of dt, read now
// (ncclScalarHostImmediate). Destroy it with DestroyRedOp once no queued
// call takes it any more.
func (c Comm) CreatePreMulSum(scalar []byte, dt DataType) (RedOp, error) {
	const call = "ncclRedOpCreatePreMulSum"
	if len(scalar) == 0 || len(scalar) > 8 {
		return 0, fmt.Errorf("detcoll/nccl: %s: a factor of %d bytes", call, len(scalar))
	}
	var b [8]byte
	copy(b[:], scalar) // Go memory: NCCL copies the factor during the call
	var op C.int
	if r := C.dcn_redOpCreatePreMulSum(&op, unsafe.Pointer(&b[0]), C.int(dt), C.uintptr_t(c)); r != 0 {
		return 0, ncclErr(r, c, call, dt, uintptr(c))
	}
	return RedOp(op), nil
}

// DestroyRedOp destroys an operator CreatePreMulSum made on c.
func (c Comm) DestroyRedOp(op RedOp) error {
	if r := C.dcn_redOpDestroy(C.int(op), C.uintptr_t(c)); r != 0 {
		return ncclErr(r, c, "ncclRedOpDestroy", op, uintptr(c))
	}
	return nil
}

// Send queues on s the sending of count elements of dt at buf to peer; a
// Recv of the peer must match it (in a group, when both send and receive).
func (c Comm) Send(buf driver.DevicePtr, count int, dt DataType, peer int, s driver.Stream) error {
	return c.p2p(C.DCN_Send, "ncclSend", buf, count, dt, peer, s)
}

// Recv queues on s the receiving of count elements of dt from peer into buf.
func (c Comm) Recv(buf driver.DevicePtr, count int, dt DataType, peer int, s driver.Stream) error {
	return c.p2p(C.DCN_Recv, "ncclRecv", buf, count, dt, peer, s)
}

func (c Comm) p2p(which C.int, call string, buf driver.DevicePtr, count int, dt DataType, peer int, s driver.Stream) error {
	if count < 0 {
		return countError(call, count)
	}
	if r := C.dcn_p2p(which, C.ulonglong(buf), C.size_t(count), C.int(dt), C.int(peer), C.uintptr_t(c), C.uintptr_t(s)); r != 0 {
		return ncclErr(r, c, call, buf, count, dt, peer, uintptr(s))
	}
	return nil
}

// GroupStart begins a group of NCCL calls that GroupEnd launches
// together (on one thread, as NCCL requires).
func GroupStart() error {
	if r := C.dcn_group(C.DCN_GroupStart); r != 0 {
		return ncclErr(r, 0, "ncclGroupStart")
	}
	return nil
}

// GroupEnd ends the group GroupStart began and queues its calls.
func GroupEnd() error {
	if r := C.dcn_group(C.DCN_GroupEnd); r != 0 {
		return ncclErr(r, 0, "ncclGroupEnd")
	}
	return nil
}

// ncclErr turns a failed ncclResult_t into an *Error carrying NCCL's
// description and, where NCCL has ncclGetLastError, its last warning (one
// buffer per process, so with several threads calling NCCL it may be
// another call's), or into an error matching ErrUnavailable if NCCL is not
// loaded.
func ncclErr(r C.dcn_result, comm Comm, call string, args ...any) error {
	if r == C.DCN_NOT_LOADED {
		return fmt.Errorf("%s: %w", callString(call, args...), errNotLoaded)
	}
	var text, detail string
	if s := C.dcn_errorString(r); s != nil {
		text = C.GoString(s)
	}
	if s := C.dcn_lastError(C.uintptr_t(comm)); s != nil {
		detail = C.GoString(s)
	}
	return newError(Result(r), text, detail, call, args...)
}
