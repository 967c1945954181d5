// table.h: the NCCL functions the library exports, written once. Each row
// is X(name, params, args) with nccl.h's parameter types; forward.c makes
// the exported functions and the real library's function pointers from
// them, and the GPU machine's check compiles this table against the real
// nccl.h (testdata/prototypes.c), so a row that differs from NCCL's
// prototype fails to compile there.

// Forwarded to the real NCCL unchanged: detcoll adds nothing to them
// (gathers and broadcasts move bytes, exactly, already).
#define DC_PASS(X)                                                                                            \
  X(ncclGetUniqueId, (ncclUniqueId* uniqueId), (uniqueId))                                                    \
  X(ncclMemAlloc, (void** ptr, size_t size), (ptr, size))                                                     \
  X(ncclMemFree, (void* ptr), (ptr))                                                                          \
  X(ncclCommCount, (const ncclComm_t comm, int* count), (comm, count))                                        \
  X(ncclCommCuDevice, (const ncclComm_t comm, int* device), (comm, device))                                   \
  X(ncclCommUserRank, (const ncclComm_t comm, int* rank), (comm, rank))                                       \
  X(ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle), (comm, buff, size, handle)) \
  X(ncclCommDeregister, (const ncclComm_t comm, void* handle), (comm, handle))                                \
  X(ncclDevCommCreate, (ncclComm_t comm, const ncclDevCommRequirements_t* reqs, ncclDevComm_t* outDevComm),   \
    (comm, reqs, outDevComm))                                                                                 \
  X(ncclDevCommDestroy, (ncclComm_t comm, const ncclDevComm_t* devComm), (comm, devComm))                     \
  X(ncclBcast, (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream), \
    (buff, count, datatype, root, comm, stream))                                                              \
  X(ncclBroadcast,                                                                                            \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,  \
     cudaStream_t stream),                                                                                    \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                                \
  X(ncclAllGather,                                                                                            \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,        \
     cudaStream_t stream),                                                                                    \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream))                                                  \
  X(ncclAlltoAll,                                                                                             \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,            \
     cudaStream_t stream),                                                                                    \
    (sendbuff, recvbuff, count, datatype, comm, stream))                                                      \
  X(ncclSend, (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), \
    (sendbuff, count, datatype, peer, comm, stream))                                                          \
  X(ncclRecv, (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), \
    (recvbuff, count, datatype, peer, comm, stream))

// Wrapped: the library exports its own (forward.c), which call the Go side
// and the real NCCL (these are its pointers).
#define DC_WRAP(X)                                                                                            \
  X(ncclGetVersion, (int* version), (version))                                                                \
  X(ncclCommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank), (comm, nranks, commId, rank)) \
  X(ncclCommInitRankConfig, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config), \
    (comm, nranks, commId, rank, config))                                                                     \
  X(ncclCommInitRankScalable,                                                                                 \
    (ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config),      \
    (newcomm, nranks, myrank, nId, commIds, config))                                                          \
  X(ncclCommInitAll, (ncclComm_t* comm, int ndev, const int* devlist), (comm, ndev, devlist))                 \
  X(ncclCommSplit, (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),          \
    (comm, color, key, newcomm, config))                                                                      \
  X(ncclCommShrink,                                                                                           \
    (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, \
     int shrinkFlags),                                                                                        \
    (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags))                                \
  X(ncclCommFinalize, (ncclComm_t comm), (comm))                                                              \
  X(ncclCommDestroy, (ncclComm_t comm), (comm))                                                               \
  X(ncclCommAbort, (ncclComm_t comm), (comm))                                                                 \
  X(ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError), (comm, asyncError))                   \
  X(ncclAllReduce,                                                                                            \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, \
     cudaStream_t stream),                                                                                    \
    (sendbuff, recvbuff, count, datatype, op, comm, stream))                                                  \
  X(ncclReduceScatter,                                                                                        \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,         \
     ncclComm_t comm, cudaStream_t stream),                                                                   \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream))                                              \
  X(ncclReduce,                                                                                               \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,   \
     ncclComm_t comm, cudaStream_t stream),                                                                   \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream))                                            \
  X(ncclRedOpCreatePreMulSum,                                                                                 \
    (ncclRedOp_t* op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm), \
    (op, scalar, datatype, residence, comm))                                                                  \
  X(ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm), (op, comm))                                          \
  X(ncclCommWindowRegister, (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags),      \
    (comm, buff, size, win, winFlags))                                                                        \
  X(ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win), (comm, win))                               \
  X(ncclGroupStart, (void), ())                                                                               \
  X(ncclGroupEnd, (void), ())                                                                                 \
  X(ncclGroupSimulateEnd, (ncclSimInfo_t* simInfo), (simInfo))

// Wrapped, returning strings.
#define DC_WRAP_STR(X)                                                   \
  X(ncclGetErrorString, (ncclResult_t result), (result))                 \
  X(ncclGetLastError, (ncclComm_t comm), (comm))
