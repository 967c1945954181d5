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

// ---- forwarded --------------------------------------------------------------

#define DC_FORWARD(name, params, args) \
  DC_EXPORT ncclResult_t name params { \
    DC_MISSING(name);                  \
    return theirs(real.name args);     \
  }
DC_PASS(DC_FORWARD)
#undef DC_FORWARD

// ---- wrapped ----------------------------------------------------------------

// The group depth of this thread (NCCL's groups are per thread).
static __thread int group_depth;

DC_EXPORT ncclResult_t ncclGroupStart(void) {
  DC_MISSING(ncclGroupStart);
  ncclResult_t r = theirs(real.ncclGroupStart());
  if (r == ncclSuccess) group_depth++;
  return r;
}

DC_EXPORT ncclResult_t ncclGroupEnd(void) {
  DC_MISSING(ncclGroupEnd);
  ncclResult_t r = real.ncclGroupEnd();
  if (group_depth > 0) group_depth--;
  return theirs(r);
}

// ncclGroupSimulateEnd ends the group as ncclGroupEnd does (NCCL's runs
// the same group end, filling in simInfo).
DC_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  DC_MISSING(ncclGroupSimulateEnd);
  ncclResult_t r = real.ncclGroupSimulateEnd(simInfo);
  if (group_depth > 0) group_depth--;
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

DC_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  DC_MISSING(ncclAllReduce);
  int g = dcgo_allreduce((uintptr_t)sendbuff, (uintptr_t)recvbuff, count, datatype, op, (uintptr_t)comm,
                         (uintptr_t)stream, group_depth > 0);
  if (g != DC_HANDED) return go_result(g);
  return theirs(real.ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream));
}

DC_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream) {
  DC_MISSING(ncclReduceScatter);
  int g = dcgo_reducescatter((uintptr_t)sendbuff, (uintptr_t)recvbuff, recvcount, datatype, op, (uintptr_t)comm,
                             (uintptr_t)stream, group_depth > 0);
  if (g != DC_HANDED) return go_result(g);
  return theirs(real.ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream));
}

DC_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  DC_MISSING(ncclReduce);
  int g = dcgo_reduce((uintptr_t)sendbuff, (uintptr_t)recvbuff, count, datatype, op, root, (uintptr_t)comm,
                      (uintptr_t)stream, group_depth > 0);
  if (g != DC_HANDED) return go_result(g);
  return theirs(real.ncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream));
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
