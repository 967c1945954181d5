// client.c: an NCCL program, linked against libdetcoll-nccl instead of
// NCCL, for the tests without a GPU. Each argument names a step; it prints
// one line per step with the result and what it saw, for the test to read.
#include <stdio.h>
#include <string.h>

typedef int ncclResult_t;
typedef struct ncclComm* ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;

ncclResult_t ncclGetVersion(int*);
ncclResult_t ncclGetUniqueId(ncclUniqueId*);
ncclResult_t ncclCommInitRank(ncclComm_t*, int, ncclUniqueId, int);
ncclResult_t ncclCommDestroy(ncclComm_t);
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t*);
ncclResult_t ncclAllReduce(const void*, void*, size_t, int, int, ncclComm_t, void*);
ncclResult_t ncclReduceScatter(const void*, void*, size_t, int, int, ncclComm_t, void*);
ncclResult_t ncclReduce(const void*, void*, size_t, int, int, int, ncclComm_t, void*);
ncclResult_t ncclSend(const void*, size_t, int, int, ncclComm_t, void*);
ncclResult_t ncclRedOpCreatePreMulSum(int*, void*, int, int, ncclComm_t);
ncclResult_t ncclRedOpDestroy(int, ncclComm_t);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclGroupSimulateEnd(void*);
const char* ncclGetErrorString(ncclResult_t);
const char* ncclGetLastError(ncclComm_t);

int main(int argc, char** argv) {
  ncclComm_t comm = NULL;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  for (int i = 1; i < argc; i++) {
    const char* step = argv[i];
    ncclResult_t r = -100;
    if (!strcmp(step, "version")) {
      int v = 0;
      r = ncclGetVersion(&v);
      printf("version %d %d\n", r, v);
      continue;
    } else if (!strcmp(step, "uniqueid")) {
      r = ncclGetUniqueId(&id);
    } else if (!strcmp(step, "init")) {
      r = ncclCommInitRank(&comm, 1, id, 0);
    } else if (!strcmp(step, "sum")) {
      r = ncclAllReduce((void*)0x1000, (void*)0x1000, 64, 7 /* float32 */, 0 /* sum */, comm, NULL);
    } else if (!strcmp(step, "intsum")) {
      r = ncclAllReduce((void*)0x1000, (void*)0x1000, 64, 2 /* int32 */, 0, comm, NULL);
    } else if (!strcmp(step, "intmax")) {
      r = ncclReduceScatter((void*)0x1000, (void*)0x2000, 64, 4 /* int64 */, 2 /* max */, comm, NULL);
    } else if (!strcmp(step, "foreign")) {
      /* a communicator the library did not see made (ncclCommGrow, a dlsym of the real NCCL) */
      r = ncclAllReduce((void*)0x1000, (void*)0x1000, 64, 7, 0, (ncclComm_t)0x5eed, NULL);
    } else if (!strcmp(step, "reduce")) {
      r = ncclReduce((void*)0x1000, (void*)0x2000, 64, 9 /* bfloat16 */, 0, 0, comm, NULL);
      if (r == 0) r = ncclReduce((void*)0x1000, (void*)0x2000, 64, 9, 0, 1, comm, NULL);
    } else if (!strcmp(step, "groupsum")) {
      /* a receive's stand-in and a sum in one group, nested once */
      r = ncclGroupStart();
      if (r == 0) r = ncclGroupStart();
      if (r == 0) r = ncclSend((void*)0x1000, 8, 7, 0, comm, NULL);
      if (r == 0) r = ncclAllReduce((void*)0x1000, (void*)0x1000, 64, 7, 0, comm, NULL);
      if (r == 0) r = ncclGroupEnd();
      if (r == 0) r = ncclReduceScatter((void*)0x1000, (void*)0x2000, 8, 6 /* float16 */, 0, comm, NULL);
      if (r == 0) r = ncclGroupEnd();
    } else if (!strcmp(step, "max")) {
      r = ncclAllReduce((void*)0x1000, (void*)0x1000, 64, 7, 2 /* max */, comm, NULL);
    } else if (!strcmp(step, "prod")) {
      r = ncclAllReduce((void*)0x1000, (void*)0x1000, 64, 7, 1 /* prod */, comm, NULL);
    } else if (!strcmp(step, "premul")) {
      /* torch's PREMUL_SUM: an operator of a host factor, one call, destroyed at once */
      float factor = 0.5f;
      int op = -1;
      r = ncclRedOpCreatePreMulSum(&op, &factor, 7, 1 /* ncclScalarHostImmediate */, comm);
      if (r == 0) r = ncclReduceScatter((void*)0x1000, (void*)0x2000, 64, 7, op, comm, NULL);
      if (r == 0) r = ncclRedOpDestroy(op, comm);
    } else if (!strcmp(step, "premulmismatch")) {
      /* an operator made for float32, called with float16 (NCCL refuses that too), then destroyed */
      float factor = 0.5f;
      int op = -1;
      r = ncclRedOpCreatePreMulSum(&op, &factor, 7, 1, comm);
      if (r == 0) {
        r = ncclAllReduce((void*)0x1000, (void*)0x1000, 64, 6 /* float16 */, op, comm, NULL);
        ncclRedOpDestroy(op, comm);
      }
    } else if (!strcmp(step, "premuldevice")) {
      int op = -1;
      r = ncclRedOpCreatePreMulSum(&op, (void*)0xfac000, 9 /* bfloat16 */, 0 /* ncclScalarDevice */, comm);
      if (r == 0) r = ncclAllReduce((void*)0x1000, (void*)0x1000, 64, 9, op, comm, NULL);
      if (r == 0) r = ncclRedOpDestroy(op, comm);
    } else if (!strcmp(step, "send")) {
      r = ncclSend((void*)0x1000, 8, 7, 0, comm, NULL);
    } else if (!strcmp(step, "group")) {
      r = ncclGroupStart();
      if (r == 0) r = ncclGroupEnd();
    } else if (!strcmp(step, "groupsim")) {
      char sim[64]; /* an ncclSimInfo_t, which the fake does not read */
      memset(sim, 0, sizeof sim);
      r = ncclGroupStart();
      if (r == 0) r = ncclGroupSimulateEnd(sim);
    } else if (!strcmp(step, "async")) {
      ncclResult_t e = -1;
      r = ncclCommGetAsyncError(comm, &e);
      printf("async %d %d\n", r, e);
      continue;
    } else if (!strcmp(step, "destroy")) {
      r = ncclCommDestroy(comm);
    } else if (!strcmp(step, "errorstring")) {
      printf("errorstring %s\n", ncclGetErrorString(5));
      continue;
    }
    printf("%s %d %s\n", step, r, r == 0 ? "" : ncclGetLastError(comm));
  }
  return 0;
}
