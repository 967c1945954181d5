// forward.c: the library's C boundary. It exports NCCL's functions
// (table.h): the ones detcoll adds nothing to go straight to the real
// NCCL; the others ask the Go side first (exports.go), which answers with
// a result or with DC_HANDED, and then the real NCCL does the call.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim.h"
#include "_cgo_export.h"

#define DC_EXPORT __attribute__((visibility("default")))

// ---- the real NCCL ----------------------------------------------------------

// Its function pointers, one per row of the tables; NULL where the real
// library lacks the function (an older NCCL).
#define DC_FIELD(name, params, args) ncclResult_t(*name) params;
#define DC_FIELD_STR(name, params, args) const char* (*name) params;
static struct {
  DC_PASS(DC_FIELD)
  DC_WRAP(DC_FIELD)
  DC_WRAP_STR(DC_FIELD_STR)
} real;
#undef DC_FIELD
#undef DC_FIELD_STR

static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static char real_error[1024];  // why it could not be loaded; "" once it was
static char real_path[512];

// own_library is the file this code was loaded from.
static const char* own_library(void) {
  Dl_info info;
  if (dladdr((void*)own_library, &info) && info.dli_fname) return info.dli_fname;
  return "";
}

// resolve finds name in h, preferring NCCL's profiling alias pname (the
// strong symbol behind the weak ncclX), and refuses a symbol of this
// library itself: the shim never forwards to itself.
static void* resolve(void* h, const char* name) {
  char pname[128];
  snprintf(pname, sizeof pname, "p%s", name);
  void* f = dlsym(h, pname);
  if (!f) f = dlsym(h, name);
  Dl_info info;
  if (f && dladdr(f, &info) && info.dli_fname && strcmp(info.dli_fname, own_library()) == 0) return NULL;
  return f;
}

static void load_real(void) {
  const char* path = getenv("DETCOLL_REAL_NCCL");
  if (!path || !*path) path = "libnccl.so.2";
  snprintf(real_path, sizeof real_path, "%s", path);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(real_error, sizeof real_error,
             "detcoll: cannot load the real NCCL (%s): set DETCOLL_REAL_NCCL to its libnccl.so.2", dlerror());
    return;
  }
  // The loader hands back this very library when it answers to NCCL's
  // name (renamed libnccl.so.2, or preloaded under it).
  Dl_info info;
  void* probe = dlsym(h, "ncclGetVersion");
  if (probe && dladdr(probe, &info) && info.dli_fname && strcmp(info.dli_fname, own_library()) == 0) {
    snprintf(real_error, sizeof real_error,
             "detcoll: %s is this library, not the real NCCL: set DETCOLL_REAL_NCCL to the real libnccl.so.2", path);
    return;
  }
#define DC_RESOLVE(name, params, args) real.name = resolve(h, #name);
  DC_PASS(DC_RESOLVE)
  DC_WRAP(DC_RESOLVE)
  DC_WRAP_STR(DC_RESOLVE)
#undef DC_RESOLVE
  if (!real.ncclGetVersion || !real.ncclCommInitRank || !real.ncclAllReduce) {
    snprintf(real_error, sizeof real_error, "detcoll: %s does not look like NCCL (no ncclGetVersion, ncclCommInitRank or ncclAllReduce)",
             path);
    memset(&real, 0, sizeof real);
    return;
  }
  real_error[0] = 0;
}

// real_ok loads the real NCCL on first use and says whether it is there.
static int real_ok(void) {
  pthread_once(&real_once, load_real);
  return real_error[0] == 0;
}

const char* dc_real_error(void) { return real_ok() ? NULL : real_error; }

// ---- the last error ---------------------------------------------------------

// The text of the last error the library returned itself; ours says
// whether ncclGetLastError should show it (a later failure of the real
// NCCL's own takes over).
static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_text[2048];
static int last_ours;

static ncclResult_t ours(ncclResult_t r, const char* text) {
  pthread_mutex_lock(&last_mu);
  snprintf(last_text, sizeof last_text, "%s", text);
  last_ours = 1;
  pthread_mutex_unlock(&last_mu);
  return r;
}

// theirs notes a result of the real NCCL's.
static ncclResult_t theirs(ncclResult_t r) {
  if (r != ncclSuccess && r != ncclInProgress) {
    pthread_mutex_lock(&last_mu);
    last_ours = 0;
    pthread_mutex_unlock(&last_mu);
  }
  return r;
}

// go_result takes a result of the Go side's: a failure's text is in Go.
static ncclResult_t go_result(int r) {
  if (r != ncclSuccess && r != ncclInProgress) {
    char buf[2048];
    dcgo_last_error(buf, sizeof buf);
    return ours((ncclResult_t)r, buf);
  }
  return (ncclResult_t)r;
}

#define DC_MISSING(name)                                                                                 \
  do {                                                                                                   \
    if (!real_ok()) return ours(ncclSystemError, real_error);                                            \
    if (!real.name) return ours(ncclInvalidUsage, "detcoll: the real NCCL has no " #name);               \
  } while (0)

// ---- groups -----------------------------------------------------------------

// This thread's group (NCCL's groups are per thread): its depth, its id
// (drawn at the outermost ncclGroupStart; the Go side keeps the group's
// deferred calls under it), whether the real NCCL got operations in it
// and how many calls the Go side deferred to its end. A few words of
// static TLS, as TestLateLoad requires.
static __thread int group_depth;
static __thread int group_forwarded;
static __thread int group_deferred;
static __thread uint64_t group_id;
static uint64_t next_group_id;

// in_group is the group id a call passes to the Go side: 0 outside one.
static uint64_t in_group(void) { return group_depth > 0 ? group_id : 0; }

// handed notes that the real NCCL got an operation, inside a group or not.
static void handed(void) {
  if (group_depth > 0) group_forwarded = 1;
}

// ---- the record of forwarded calls (DETCOLL_NCCL_REPORT) --------------------

#define DC_NAME(name, params, args) #name,
static const char* const pass_names[] = {DC_PASS(DC_NAME)};
#undef DC_NAME
enum { n_pass = sizeof pass_names / sizeof pass_names[0] };
static uint64_t pass_counts[n_pass];
static int recording;  // DETCOLL_NCCL_REPORT is set: count, and write the record at exit

static void write_record(void) { dcgo_write_report(); }

// DETCOLL_NCCL_CPUPROFILE (a file) profiles the library's Go side for the
// process's life: where its host time goes, under the caller's program.
static void stop_profile(void) { dcgo_stop_profile(); }

__attribute__((constructor)) static void start_record(void) {
  const char* v = getenv("DETCOLL_NCCL_REPORT");
  if (v && *v) {
    recording = 1;
    atexit(write_record);
  }
  const char* p = getenv("DETCOLL_NCCL_CPUPROFILE");
  if (p && *p) atexit(stop_profile);
}

int dc_pass_count(int i, const char** name, uint64_t* calls) {
  if (i < 0 || i >= n_pass) return 0;
  *name = pass_names[i];
  *calls = __atomic_load_n(&pass_counts[i], __ATOMIC_RELAXED);
  return 1;
}

// ---- forwarded --------------------------------------------------------------

enum {
#define DC_INDEX(name, params, args) pass_##name,
  DC_PASS(DC_INDEX)
#undef DC_INDEX
};

#define DC_FORWARD(name, params, args)                                                 \
  DC_EXPORT ncclResult_t name params {                                                 \
    DC_MISSING(name);                                                                  \
    if (recording) __atomic_fetch_add(&pass_counts[pass_##name], 1, __ATOMIC_RELAXED); \
    handed();                                                                          \
    return theirs(real.name args);                                                     \
  }
DC_PASS(DC_FORWARD)
#undef DC_FORWARD

// ---- wrapped ----------------------------------------------------------------

DC_EXPORT ncclResult_t ncclGroupStart(void) {
  DC_MISSING(ncclGroupStart);
  ncclResult_t r = theirs(real.ncclGroupStart());
  if (r == ncclSuccess && group_depth++ == 0) {
    group_id = __atomic_add_fetch(&next_group_id, 1, __ATOMIC_RELAXED);
    group_forwarded = 0;
    group_deferred = 0;
  }
  return r;
}

// ncclGroupEnd runs the group's deferred calls with it: the Go side's
// phase 0 before the real group end, phase 1 after (group.go says why).
// A failure of the real NCCL's comes first, then the Go side's.
DC_EXPORT ncclResult_t ncclGroupEnd(void) {
  DC_MISSING(ncclGroupEnd);
  int ours = group_depth == 1 && group_deferred > 0;
  int r0 = ncclSuccess, r1 = ncclSuccess, left = 0;
  if (ours) r0 = dcgo_group_end(group_id, 0, group_forwarded, &left);
  ncclResult_t r = real.ncclGroupEnd();
  if (left) r1 = dcgo_group_end(group_id, 1, group_forwarded, &left);
  if (group_depth > 0 && --group_depth == 0) group_deferred = 0;
  if (r != ncclSuccess && r != ncclInProgress) return theirs(r);
  if (r0 != ncclSuccess) return go_result(r0);
  if (r1 != ncclSuccess) return go_result(r1);
  return r;
}

// ncclGroupSimulateEnd ends the group without running its operations
// (NCCL estimates their time instead): the deferred calls are dropped.
DC_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  DC_MISSING(ncclGroupSimulateEnd);
  ncclResult_t r = real.ncclGroupSimulateEnd(simInfo);
  if (group_depth == 1 && group_deferred > 0) dcgo_group_drop(group_id);
  if (group_depth > 0 && --group_depth == 0) group_deferred = 0;
  return theirs(r);
}

// ncclGetVersion reports the version of the real NCCL, whose ABI the
// library exports; without one, that of nccl.h 2.28, its reference.
DC_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ours(ncclInvalidArgument, "detcoll: ncclGetVersion: NULL version");
  if (!real_ok()) {
    *version = 22800;
    return ncclSuccess;
  }
  return theirs(real.ncclGetVersion(version));
}

int dc_real_version(int* v) {
  if (!real_ok()) return -1;
  return real.ncclGetVersion(v);
}

// inited tells the Go side of a communicator the real NCCL made; ready
// says it is usable at once (a blocking init outside a group).
static ncclResult_t inited(ncclResult_t r, ncclComm_t* comm, int nranks, int rank) {
  handed();
  if ((r == ncclSuccess || r == ncclInProgress) && comm && *comm)
    dcgo_init((uintptr_t)*comm, nranks, rank, r == ncclSuccess && group_depth == 0);
  return theirs(r);
}

DC_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  DC_MISSING(ncclCommInitRank);
  return inited(real.ncclCommInitRank(comm, nranks, commId, rank), comm, nranks, rank);
}

DC_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                              ncclConfig_t* config) {
  DC_MISSING(ncclCommInitRankConfig);
  return inited(real.ncclCommInitRankConfig(comm, nranks, commId, rank, config), comm, nranks, rank);
}

DC_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                ncclUniqueId* commIds, ncclConfig_t* config) {
  DC_MISSING(ncclCommInitRankScalable);
  return inited(real.ncclCommInitRankScalable(newcomm, nranks, myrank, nId, commIds, config), newcomm, nranks,
                myrank);
}

DC_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  DC_MISSING(ncclCommInitAll);
  ncclResult_t r = real.ncclCommInitAll(comm, ndev, devlist);
  if (r == ncclSuccess) dcgo_init_all((uintptr_t*)comm, ndev, (int*)devlist);
  return theirs(r);
}

// derived tells the Go side of a communicator split or shrunk from another.
static ncclResult_t derived(ncclResult_t r, ncclComm_t* newcomm) {
  handed();
  if ((r == ncclSuccess || r == ncclInProgress) && newcomm && *newcomm)
    dcgo_init((uintptr_t)*newcomm, -1, -1, r == ncclSuccess && group_depth == 0);
  return theirs(r);
}

DC_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  DC_MISSING(ncclCommSplit);
  return derived(real.ncclCommSplit(comm, color, key, newcomm, config), newcomm);
}

DC_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                      ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  DC_MISSING(ncclCommShrink);
  return derived(real.ncclCommShrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags),
                 newcomm);
}

// Finalize and destroy close detcoll's communicator first, while the
// real one still works; abort stops detcoll's kernels first.
DC_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  DC_MISSING(ncclCommFinalize);
  dcgo_finalize((uintptr_t)comm);
  return theirs(real.ncclCommFinalize(comm));
}

DC_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  DC_MISSING(ncclCommDestroy);
  dcgo_destroy((uintptr_t)comm);
  return theirs(real.ncclCommDestroy(comm));
}

DC_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  DC_MISSING(ncclCommAbort);
  dcgo_abort((uintptr_t)comm);
  return theirs(real.ncclCommAbort(comm));
}

DC_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  DC_MISSING(ncclCommGetAsyncError);
  ncclResult_t r = theirs(real.ncclCommGetAsyncError(comm, asyncError));
  if (r == ncclSuccess && asyncError && *asyncError == ncclSuccess) {
    int g = dcgo_async_error((uintptr_t)comm);
    if (g != ncclSuccess) *asyncError = go_result(g);
  }
  return r;
}

// A PreMulSum operator is the real NCCL's, made first, so that its number
// is NCCL's and a call handed on with it works as without the library;
// then the Go side learns of it (premul.go), reading a host factor now,
// as NCCL does. It is destroyed on the Go side first: the real NCCL may
// hand its number to the next operator made. Neither queues work, so
// neither counts as an operation of the caller's group (handed).
DC_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                ncclScalarResidence_t residence, ncclComm_t comm) {
  DC_MISSING(ncclRedOpCreatePreMulSum);
  ncclResult_t r = real.ncclRedOpCreatePreMulSum(op, scalar, datatype, residence, comm);
  if (r == ncclSuccess && op)
    dcgo_premul_create((uintptr_t)comm, *op, residence == DC_SCALAR_HOST ? scalar : NULL, (uintptr_t)scalar, datatype,
                       residence);
  return theirs(r);
}

DC_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  DC_MISSING(ncclRedOpDestroy);
  // Inside a group, an operator a deferred call takes is destroyed by the
  // Go side after the group's calls (premul.go, DestroyRedOp).
  if (dcgo_premul_destroy((uintptr_t)comm, op, in_group()) == 1) return ncclSuccess;
  return theirs(real.ncclRedOpDestroy(op, comm));
}

// A window is the real NCCL's, registered first (collectively, as for
// detcoll), so that NCCL's own kernels may use it and win is NCCL's; then
// detcoll registers the memory too where it can (ncclshim's window.go).
// Deregistered on the Go side first, while the real window still stands.
DC_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                              int winFlags) {
  DC_MISSING(ncclCommWindowRegister);
  ncclResult_t r = real.ncclCommWindowRegister(comm, buff, size, win, winFlags);
  if (r == ncclSuccess && win && *win)
    dcgo_window_register((uintptr_t)comm, (uintptr_t)buff, size, (uintptr_t)*win, in_group());
  return theirs(r);
}

DC_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  DC_MISSING(ncclCommWindowDeregister);
  dcgo_window_deregister((uintptr_t)comm, (uintptr_t)win);
  return theirs(real.ncclCommWindowDeregister(comm, win));
}

// A reduction asks the Go side, which answers with a result, DC_HANDED
// (the real NCCL makes it now) or DC_DEFERRED (it runs at the group's end).
// When recording, the time of the ones the Go side made is summed: the
// crossing's cost shows beside the Go side's own (report.go).
#define DC_REDUCTION(call, real_call)                    \
  do {                                                   \
    uint64_t t0 = recording ? now_ns() : 0;              \
    int g = call;                                        \
    if (g == DC_DEFERRED) {                              \
      group_deferred++;                                  \
      return ncclSuccess;                                \
    }                                                    \
    if (g != DC_HANDED) {                                \
      if (recording) note_made(t0);                      \
      return go_result(g);                               \
    }                                                    \
    handed();                                            \
    return theirs(real_call);                            \
  } while (0)

static uint64_t made_calls, made_ns;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void note_made(uint64_t t0) {
  __atomic_fetch_add(&made_ns, now_ns() - t0, __ATOMIC_RELAXED);
  __atomic_fetch_add(&made_calls, 1, __ATOMIC_RELAXED);
}

double dc_boundary_us(void) {
  uint64_t n = __atomic_load_n(&made_calls, __ATOMIC_RELAXED);
  return n ? (double)__atomic_load_n(&made_ns, __ATOMIC_RELAXED) / (double)n / 1e3 : 0;
}

DC_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  DC_MISSING(ncclAllReduce);
  DC_REDUCTION(dcgo_reduction(DC_ALLREDUCE, (uintptr_t)sendbuff, (uintptr_t)recvbuff, count, datatype, op, 0,
                              (uintptr_t)comm, (uintptr_t)stream, in_group()),
               real.ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream));
}

DC_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream) {
  DC_MISSING(ncclReduceScatter);
  DC_REDUCTION(dcgo_reduction(DC_REDUCESCATTER, (uintptr_t)sendbuff, (uintptr_t)recvbuff, recvcount, datatype, op,
                              0, (uintptr_t)comm, (uintptr_t)stream, in_group()),
               real.ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream));
}

DC_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  DC_MISSING(ncclReduce);
  DC_REDUCTION(dcgo_reduction(DC_REDUCE, (uintptr_t)sendbuff, (uintptr_t)recvbuff, count, datatype, op, root,
                              (uintptr_t)comm, (uintptr_t)stream, in_group()),
               real.ncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream));
}

// ---- strings ----------------------------------------------------------------

static const char* const result_names[] = {
    "no error", "unhandled cuda error", "unhandled system error", "internal error", "invalid argument",
    "invalid usage", "remote process exited or there was a network error", "NCCL operation in progress",
};

DC_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  if (real_ok() && real.ncclGetErrorString) return real.ncclGetErrorString(result);
  if ((int)result >= 0 && (int)result < (int)(sizeof result_names / sizeof result_names[0])) return result_names[result];
  return "unknown result code";
}

// ncclGetLastError returns the library's own last error when the last
// failure was its own, and the real NCCL's otherwise. The text stays valid
// until the next failure, as NCCL's does.
//
// Each thread reads its own copy, made in memory of a pthread key rather
// than in a __thread array: a library's static TLS must stay tiny, or
// dlopen of it after the program started fails ("cannot allocate memory in
// static TLS block"; Python's ctypes loads it that way).
static pthread_key_t copy_key;
static pthread_once_t copy_once = PTHREAD_ONCE_INIT;
static void make_copy_key(void) { pthread_key_create(&copy_key, free); }

DC_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  pthread_once(&copy_once, make_copy_key);
  char* copy = pthread_getspecific(copy_key);
  if (!copy && (copy = malloc(sizeof last_text)) != NULL) pthread_setspecific(copy_key, copy);
  pthread_mutex_lock(&last_mu);
  int mine = last_ours;
  if (mine && copy) memcpy(copy, last_text, sizeof last_text);
  pthread_mutex_unlock(&last_mu);
  if (mine) return copy ? copy : "detcoll: out of memory for the error text";
  if (real_ok() && real.ncclGetLastError) return real.ncclGetLastError(comm);
  return real_ok() ? "" : real_error;
}

// ---- for the Go side --------------------------------------------------------

int dc_real_allgather(uintptr_t comm, uintptr_t send, uintptr_t recv, size_t n, uintptr_t stream) {
  if (!real_ok()) return ncclSystemError;
  // Bytes: ncclUint8 (1).
  return real.ncclAllGather((const void*)send, (void*)recv, n, 1, (ncclComm_t)comm, (cudaStream_t)stream);
}

int dc_real_redop_destroy(uintptr_t comm, int op) {
  if (!real_ok()) return ncclSystemError;
  return theirs(real.ncclRedOpDestroy(op, (ncclComm_t)comm));
}

int dc_real_reduction(int kind, uintptr_t send, uintptr_t recv, size_t count, int dt, int op, int root,
                      uintptr_t comm, uintptr_t stream) {
  if (!real_ok()) return ncclSystemError;
  const void* s = (const void*)send;
  void* r = (void*)recv;
  ncclComm_t c = (ncclComm_t)comm;
  cudaStream_t st = (cudaStream_t)stream;
  switch (kind) {
    case DC_ALLREDUCE:
      return theirs(real.ncclAllReduce(s, r, count, dt, op, c, st));
    case DC_REDUCESCATTER:
      return theirs(real.ncclReduceScatter(s, r, count, dt, op, c, st));
    case DC_REDUCE:
      return theirs(real.ncclReduce(s, r, count, dt, op, root, c, st));
  }
  return ncclInvalidArgument;
}

int dc_real_comm_query(uintptr_t comm, int what, int* out) {
  if (!real_ok()) return ncclSystemError;
  switch (what) {
    case 0:
      return real.ncclCommCount((ncclComm_t)comm, out);
    case 1:
      return real.ncclCommUserRank((ncclComm_t)comm, out);
    case 2:
      return real.ncclCommCuDevice((ncclComm_t)comm, out);
    case 3: {
      ncclResult_t state = ncclSuccess;
      int r = real.ncclCommGetAsyncError((ncclComm_t)comm, &state);
      *out = state;
      return r;
    }
  }
  return ncclInvalidArgument;
}
