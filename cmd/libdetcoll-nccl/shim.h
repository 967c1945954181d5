// shim.h: NCCL's C ABI types, as nccl.h (2.28) declares them, so that the
// library builds without nccl.h. Handles are opaque pointers, enums are
// ints, ncclUniqueId is a 128-byte struct passed by value; the structs the
// library only passes through (ncclConfig_t, ncclSimInfo_t, the device
// communicator's) are incomplete types: their layout changes with NCCL's
// version and is the real NCCL's business.
#ifndef DETCOLL_SHIM_H
#define DETCOLL_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

typedef struct ncclComm* ncclComm_t;
typedef struct CUstream_st* cudaStream_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef int ncclScalarResidence_t;
typedef struct ncclConfig ncclConfig_t;
typedef struct ncclSimInfo ncclSimInfo_t;
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;

#include "table.h"

// DC_HANDED is what the Go side answers for a call the real NCCL must make;
// DC_DEFERRED for a call it runs at the end of the caller's group.
#define DC_HANDED (-1)
#define DC_DEFERRED (-2)

// ncclScalarHostImmediate: a PreMulSum factor in host memory, read at the
// operator's creation (ncclshim.ScalarHostImmediate).
#define DC_SCALAR_HOST 1

// The reductions, as the Go side numbers them (ncclshim.Kind).
#define DC_ALLREDUCE 0
#define DC_REDUCESCATTER 1
#define DC_REDUCE 2

// The real NCCL as the Go side uses it (forward.c).
int dc_real_allgather(uintptr_t comm, uintptr_t send, uintptr_t recv, size_t n, uintptr_t stream);
int dc_real_reduction(int kind, uintptr_t send, uintptr_t recv, size_t count, int dt, int op, int root,
                      uintptr_t comm, uintptr_t stream);
int dc_real_redop_destroy(uintptr_t comm, int op);
int dc_pass_count(int i, const char** name, uint64_t* calls);  // 0 past the last
double dc_boundary_us(void);  // the mean time of a reduction the Go side made, in the C function
int dc_real_comm_query(uintptr_t comm, int what, int* out);  // what: 0 count, 1 user rank, 2 device, 3 async error
const char* dc_real_error(void);                             // why the real NCCL could not be loaded, or NULL
int dc_real_version(int* v);

#endif
