// fakenccl.c: a stand-in for the real libnccl.so.2 in the tests without a
// GPU. It hands out communicators, answers their queries and logs every
// collective it is given, so that a test sees what the library forwarded.
// Its functions are pnccl* (NCCL's strong names) plus weak nccl* aliases,
// as NCCL's are.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
struct fakecomm { int nranks, rank; };

static void note(const char* what) {
  const char* path = getenv("FAKE_NCCL_LOG");
  if (!path) return;
  FILE* f = fopen(path, "a");
  if (f) {
    fprintf(f, "%s\n", what);
    fclose(f);
  }
}

#define ALIAS(name) __attribute__((weak, alias("p" #name)))

ncclResult_t pncclGetVersion(int* v) { *v = 22803; return 0; }
ncclResult_t ncclGetVersion(int* v) ALIAS(ncclGetVersion);

ncclResult_t pncclGetUniqueId(void* id) { memset(id, 7, 128); note("getuniqueid"); return 0; }
ncclResult_t ncclGetUniqueId(void* id) ALIAS(ncclGetUniqueId);

typedef struct { char internal[128]; } uid;
ncclResult_t pncclCommInitRank(struct fakecomm** comm, int nranks, uid id, int rank) {
  (void)id;
  *comm = malloc(sizeof **comm);
  (*comm)->nranks = nranks;
  (*comm)->rank = rank;
  note("initrank");
  return 0;
}
ncclResult_t ncclCommInitRank(struct fakecomm** comm, int nranks, uid id, int rank) ALIAS(ncclCommInitRank);

ncclResult_t pncclCommCount(struct fakecomm* c, int* n) { *n = c->nranks; return 0; }
ncclResult_t ncclCommCount(struct fakecomm* c, int* n) ALIAS(ncclCommCount);
ncclResult_t pncclCommUserRank(struct fakecomm* c, int* r) { *r = c->rank; return 0; }
ncclResult_t ncclCommUserRank(struct fakecomm* c, int* r) ALIAS(ncclCommUserRank);
ncclResult_t pncclCommCuDevice(struct fakecomm* c, int* d) { (void)c; *d = 0; return 0; }
ncclResult_t ncclCommCuDevice(struct fakecomm* c, int* d) ALIAS(ncclCommCuDevice);

ncclResult_t pncclCommDestroy(struct fakecomm* c) { free(c); note("destroy"); return 0; }
ncclResult_t ncclCommDestroy(struct fakecomm* c) ALIAS(ncclCommDestroy);
ncclResult_t pncclCommGetAsyncError(struct fakecomm* c, ncclResult_t* e) { (void)c; *e = 0; return 0; }
ncclResult_t ncclCommGetAsyncError(struct fakecomm* c, ncclResult_t* e) ALIAS(ncclCommGetAsyncError);

ncclResult_t pncclAllReduce(const void* s, void* r, size_t n, int dt, int op, void* c, void* st) {
  (void)s; (void)r; (void)c; (void)st;
  char b[64];
  snprintf(b, sizeof b, "allreduce n=%zu dt=%d op=%d", n, dt, op);
  note(b);
  return 0;
}
ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, int dt, int op, void* c, void* st) ALIAS(ncclAllReduce);

ncclResult_t pncclReduceScatter(const void* s, void* r, size_t n, int dt, int op, void* c, void* st) {
  (void)s; (void)r; (void)c; (void)st;
  char b[64];
  snprintf(b, sizeof b, "reducescatter n=%zu dt=%d op=%d", n, dt, op);
  note(b);
  return 0;
}
ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, int dt, int op, void* c, void* st) ALIAS(ncclReduceScatter);

ncclResult_t pncclReduce(const void* s, void* r, size_t n, int dt, int op, int root, void* c, void* st) {
  (void)s; (void)r; (void)c; (void)st;
  char b[64];
  snprintf(b, sizeof b, "reduce n=%zu dt=%d op=%d root=%d", n, dt, op, root);
  note(b);
  return 0;
}
ncclResult_t ncclReduce(const void* s, void* r, size_t n, int dt, int op, int root, void* c, void* st) ALIAS(ncclReduce);

ncclResult_t pncclSend(const void* s, size_t n, int dt, int peer, void* c, void* st) {
  (void)s; (void)dt; (void)c; (void)st;
  char b[64];
  snprintf(b, sizeof b, "send n=%zu peer=%d", n, peer);
  note(b);
  return 0;
}
ncclResult_t ncclSend(const void* s, size_t n, int dt, int peer, void* c, void* st) ALIAS(ncclSend);

/* PreMulSum operators: numbered from ncclNumOps (5) up, as NCCL's are. */
static int next_op = 5;
ncclResult_t pncclRedOpCreatePreMulSum(int* op, void* scalar, int dt, int residence, void* c) {
  (void)scalar; (void)c;
  *op = next_op++;
  char b[64];
  snprintf(b, sizeof b, "premulcreate op=%d dt=%d residence=%d", *op, dt, residence);
  note(b);
  return 0;
}
ncclResult_t ncclRedOpCreatePreMulSum(int* op, void* scalar, int dt, int residence, void* c) ALIAS(ncclRedOpCreatePreMulSum);
ncclResult_t pncclRedOpDestroy(int op, void* c) {
  (void)c;
  char b[64];
  snprintf(b, sizeof b, "premuldestroy op=%d", op);
  note(b);
  return 0;
}
ncclResult_t ncclRedOpDestroy(int op, void* c) ALIAS(ncclRedOpDestroy);

ncclResult_t pncclGroupStart(void) { note("groupstart"); return 0; }
ncclResult_t ncclGroupStart(void) ALIAS(ncclGroupStart);
ncclResult_t pncclGroupEnd(void) { note("groupend"); return 0; }
ncclResult_t ncclGroupEnd(void) ALIAS(ncclGroupEnd);
ncclResult_t pncclGroupSimulateEnd(void* sim) { (void)sim; note("groupsimulateend"); return 0; }
ncclResult_t ncclGroupSimulateEnd(void* sim) ALIAS(ncclGroupSimulateEnd);

const char* pncclGetErrorString(ncclResult_t r) { (void)r; return "fake error string"; }
const char* ncclGetErrorString(ncclResult_t r) ALIAS(ncclGetErrorString);
