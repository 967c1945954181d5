// cudrv.h declares, without CUDA headers, the few CUDA driver and NVRTC types
// and functions detcoll uses, and the dc_* shims that call them through
// pointers resolved with dlsym (see cudrv.c and load.go).
//
// Handle types (CUcontext, CUstream, ...) are declared as uintptr_t rather than
// opaque pointers: on the Linux ABIs Go supports (x86-64 SysV, AArch64 AAPCS)
// both are passed in the same integer registers, and an integer lets Go hold
// and pass them without unsafe.Pointer conversions.
#ifndef DETCOLL_CUDRV_H
#define DETCOLL_CUDRV_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef uintptr_t CUcontext;
typedef uintptr_t CUmodule;
typedef uintptr_t CUfunction;
typedef uintptr_t CUstream;
typedef uintptr_t CUevent;
typedef uintptr_t CUgraph;
typedef uintptr_t CUgraphExec;
typedef unsigned long long CUdeviceptr;
typedef struct { char reserved[64]; } CUipcMemHandle;

// The virtual memory management API (cuMemCreate and its kin). The enums of
// cuda.h are int-sized; these structs keep its layout (CUmemAllocationProp:
// 32 bytes, CUmemAccessDesc: 12).
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct {
  int type; // CUmemLocationType
  int id;
} CUmemLocation;
typedef struct {
  int type;                 // CUmemAllocationType
  int requestedHandleTypes; // CUmemAllocationHandleType, a bit set
  CUmemLocation location;
  void* win32HandleMetaData; // NULL off Windows
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;
typedef struct {
  CUmemLocation location;
  int flags; // CUmemAccess_flags
} CUmemAccessDesc;

typedef int nvrtcResult;
typedef uintptr_t nvrtcProgram;

// DC_NOT_LOADED is what a shim returns when its symbol is not resolved (Load
// was not called, failed, or Unload dropped the last reference). Real codes
// are never negative.
#define DC_NOT_LOADED (-1)

// DC_MAX_ARGS bounds the kernel parameters dc_launch accepts.
#define DC_MAX_ARGS 256

// X(name, symbols, parameters, arguments): symbols is the exported name to
// dlsym, or several NUL-separated names tried in order.
#define DC_CUDA_API(X) \
  X(cuGetErrorName, "cuGetErrorName", (CUresult e, const char** s), (e, s)) \
  X(cuGetErrorString, "cuGetErrorString", (CUresult e, const char** s), (e, s)) \
  X(cuInit, "cuInit", (unsigned int flags), (flags)) \
  X(cuDriverGetVersion, "cuDriverGetVersion", (int* v), (v)) \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int* n), (n)) \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice* d, int ordinal), (d, ordinal)) \
  X(cuDeviceGetName, "cuDeviceGetName", (char* s, int n, CUdevice d), (s, n, d)) \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int* v, int a, CUdevice d), (v, a, d)) \
  X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", (char* s, int n, CUdevice d), (s, n, d)) \
  X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", (int* ok, CUdevice d, CUdevice peer), (ok, d, peer)) \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext* c, CUdevice d), (c, d)) \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice d), (d)) \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext c), (c)) \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", (CUcontext* c), (c)) \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext c), (c)) \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", (CUcontext* c), (c)) \
  X(cuCtxSynchronize, "cuCtxSynchronize", (void), ()) \
  X(cuMemGetInfo, "cuMemGetInfo_v2", (size_t* free, size_t* total), (free, total)) \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr* p, size_t n), (p, n)) \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr p), (p)) \
  X(cuMemsetD8, "cuMemsetD8_v2", (CUdeviceptr p, unsigned char v, size_t n), (p, v, n)) \
  X(cuMemsetD32, "cuMemsetD32_v2", (CUdeviceptr p, unsigned int v, size_t n), (p, v, n)) \
  X(cuMemsetD8Async, "cuMemsetD8Async", (CUdeviceptr p, unsigned char v, size_t n, CUstream s), (p, v, n, s)) \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr d, const void* h, size_t n), (d, h, n)) \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void* h, CUdeviceptr d, size_t n), (h, d, n)) \
  X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n)) \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr d, const void* h, size_t n, CUstream s), (d, h, n, s)) \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void* h, CUdeviceptr d, size_t n, CUstream s), (h, d, n, s)) \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", (CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s), (d, src, n, s)) \
  X(cuMemHostAlloc, "cuMemHostAlloc", (void** p, size_t n, unsigned int flags), (p, n, flags)) \
  X(cuMemFreeHost, "cuMemFreeHost", (void* p), (p)) \
  X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", (CUdeviceptr* d, void* p, unsigned int flags), (d, p, flags)) \
  X(cuMemHostRegister, "cuMemHostRegister_v2", (void* p, size_t n, unsigned int flags), (p, n, flags)) \
  X(cuMemHostUnregister, "cuMemHostUnregister", (void* p), (p)) \
  X(cuPointerGetAttribute, "cuPointerGetAttribute", (void* data, int attr, CUdeviceptr p), (data, attr, p)) \
  X(cuIpcGetMemHandle, "cuIpcGetMemHandle", (CUipcMemHandle* h, CUdeviceptr p), (h, p)) \
  X(cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2", (CUdeviceptr* p, CUipcMemHandle h, unsigned int flags), (p, h, flags)) \
  X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle", (CUdeviceptr p), (p)) \
  X(cuMemGetAddressRange, "cuMemGetAddressRange_v2", (CUdeviceptr* base, size_t* n, CUdeviceptr p), (base, n, p)) \
  X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", \
    (size_t* g, const CUmemAllocationProp* prop, int option), (g, prop, option)) \
  X(cuMemCreate, "cuMemCreate", \
    (CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop, unsigned long long flags), \
    (h, n, prop, flags)) \
  X(cuMemRelease, "cuMemRelease", (CUmemGenericAllocationHandle h), (h)) \
  /* addr is a void* in cuda.h: an address, passed in the same register as an integer. */ \
  X(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle", (CUmemGenericAllocationHandle* h, uintptr_t addr), \
    (h, addr)) \
  X(cuMemExportToShareableHandle, "cuMemExportToShareableHandle", \
    (void* out, CUmemGenericAllocationHandle h, int type, unsigned long long flags), (out, h, type, flags)) \
  /* osHandle is a void* in cuda.h; for a POSIX file descriptor it is the descriptor's value. */ \
  X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle", \
    (CUmemGenericAllocationHandle* h, uintptr_t osHandle, int type), (h, osHandle, type)) \
  X(cuMemAddressReserve, "cuMemAddressReserve", \
    (CUdeviceptr* p, size_t n, size_t align, CUdeviceptr addr, unsigned long long flags), (p, n, align, addr, flags)) \
  X(cuMemAddressFree, "cuMemAddressFree", (CUdeviceptr p, size_t n), (p, n)) \
  X(cuMemMap, "cuMemMap", \
    (CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long flags), \
    (p, n, off, h, flags)) \
  X(cuMemUnmap, "cuMemUnmap", (CUdeviceptr p, size_t n), (p, n)) \
  X(cuMemSetAccess, "cuMemSetAccess", (CUdeviceptr p, size_t n, const CUmemAccessDesc* desc, size_t count), \
    (p, n, desc, count)) \
  X(cuStreamCreate, "cuStreamCreate", (CUstream* s, unsigned int flags), (s, flags)) \
  X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream s), (s)) \
  X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream s), (s)) \
  X(cuStreamQuery, "cuStreamQuery", (CUstream s), (s)) \
  X(cuStreamIsCapturing, "cuStreamIsCapturing", (CUstream s, int* status), (s, status)) \
  /* _v2 takes six parameters, _v3 seven; the optional outputs past id are passed NULL, */ \
  /* so one prototype of seven calls either (the System V ABI ignores an extra argument). */ \
  X(cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo_v2\0cuStreamGetCaptureInfo_v3", \
    (CUstream s, int* status, unsigned long long* id, void* graph, void* deps, void* edges, void* n), \
    (s, status, id, graph, deps, edges, n)) \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", (CUstream s, CUevent e, unsigned int flags), (s, e, flags)) \
  X(cuEventCreate, "cuEventCreate", (CUevent* e, unsigned int flags), (e, flags)) \
  X(cuEventDestroy, "cuEventDestroy_v2", (CUevent e), (e)) \
  X(cuEventRecord, "cuEventRecord", (CUevent e, CUstream s), (e, s)) \
  X(cuEventSynchronize, "cuEventSynchronize", (CUevent e), (e)) \
  X(cuEventQuery, "cuEventQuery", (CUevent e), (e)) \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2\0cuEventElapsedTime", (float* ms, CUevent a, CUevent b), (ms, a, b)) \
  X(cuModuleLoadData, "cuModuleLoadData", (CUmodule* m, const void* image), (m, image)) \
  X(cuModuleUnload, "cuModuleUnload", (CUmodule m), (m)) \
  X(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction* f, CUmodule m, const char* name), (f, m, name)) \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction f, int attr, int v), (f, attr, v)) \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", \
    (int* n, CUfunction f, int block, size_t shmem), (n, f, block, shmem)) \
  X(cuLaunchKernel, "cuLaunchKernel", \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, \
     unsigned int bz, unsigned int shmem, CUstream s, void** params, void** extra), \
    (f, gx, gy, gz, bx, by, bz, shmem, s, params, extra)) \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", (CUstream s, int mode), (s, mode)) \
  X(cuStreamEndCapture, "cuStreamEndCapture", (CUstream s, CUgraph* g), (s, g)) \
  X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", (int* mode), (mode)) \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", \
    (CUgraphExec* x, CUgraph g, unsigned long long flags), (x, g, flags)) \
  X(cuGraphLaunch, "cuGraphLaunch", (CUgraphExec x, CUstream s), (x, s)) \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec x), (x)) \
  X(cuGraphDestroy, "cuGraphDestroy", (CUgraph g), (g))

#define DC_NVRTC_API(X) \
  X(nvrtcVersion, "nvrtcVersion", (int* major, int* minor), (major, minor)) \
  X(nvrtcCreateProgram, "nvrtcCreateProgram", \
    (nvrtcProgram* p, const char* src, const char* name, int nh, const char* const* hs, const char* const* hn), \
    (p, src, name, nh, hs, hn)) \
  X(nvrtcDestroyProgram, "nvrtcDestroyProgram", (nvrtcProgram* p), (p)) \
  X(nvrtcCompileProgram, "nvrtcCompileProgram", (nvrtcProgram p, int n, const char* const* opts), (p, n, opts)) \
  X(nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", (nvrtcProgram p, size_t* n), (p, n)) \
  X(nvrtcGetProgramLog, "nvrtcGetProgramLog", (nvrtcProgram p, char* log), (p, log)) \
  X(nvrtcGetCUBINSize, "nvrtcGetCUBINSize", (nvrtcProgram p, size_t* n), (p, n)) \
  X(nvrtcGetCUBIN, "nvrtcGetCUBIN", (nvrtcProgram p, char* cubin), (p, cubin))

#define DC_CUDA_PROTO(name, syms, params, args) CUresult dc_##name params;
DC_CUDA_API(DC_CUDA_PROTO)
#undef DC_CUDA_PROTO
#define DC_NVRTC_PROTO(name, syms, params, args) nvrtcResult dc_##name params;
DC_NVRTC_API(DC_NVRTC_PROTO)
#undef DC_NVRTC_PROTO

// dc_nvrtcGetErrorString returns NULL when NVRTC is not loaded.
const char* dc_nvrtcGetErrorString(nvrtcResult r);

// dc_launch calls cuLaunchKernel with params[i] = vals + offs[i], building the
// void** array on the C stack so that no Go memory ever holds it.
CUresult dc_launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                   unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void* vals,
                   const uint32_t* offs, int n);

// Symbol table access for load.go. lib is DC_LIB_CUDA or DC_LIB_NVRTC.
enum { DC_LIB_CUDA = 0, DC_LIB_NVRTC = 1 };
int dc_sym_count(int lib);
// dc_sym_name returns alternative alt of entry i, or NULL past the last one.
const char* dc_sym_name(int lib, int i, int alt);
void dc_sym_set(int lib, int i, void* p);
// dc_sym_clear forgets every resolved symbol of lib.
void dc_sym_clear(int lib);

#endif
