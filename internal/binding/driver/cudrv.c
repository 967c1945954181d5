//go:build cgo && linux

// cudrv.c holds the function pointers that load.go fills with dlsym and the
// dc_* shims that call them. A shim whose pointer is unset returns
// DC_NOT_LOADED instead of crashing.
#include <string.h>
#include "cudrv.h"

#define DC_CUDA_PTR(name, syms, params, args) static CUresult(*p_##name) params;
DC_CUDA_API(DC_CUDA_PTR)
#define DC_NVRTC_PTR(name, syms, params, args) static nvrtcResult(*p_##name) params;
DC_NVRTC_API(DC_NVRTC_PTR)
static const char* (*p_nvrtcGetErrorString)(nvrtcResult);

#define DC_SHIM(name, syms, params, args) \
  CUresult dc_##name params {               \
    if (!p_##name) return DC_NOT_LOADED;    \
    return p_##name args;                   \
  }
DC_CUDA_API(DC_SHIM)
DC_NVRTC_API(DC_SHIM)

const char* dc_nvrtcGetErrorString(nvrtcResult r) {
  if (!p_nvrtcGetErrorString) return NULL;
  return p_nvrtcGetErrorString(r);
}

CUresult dc_launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                   unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void* vals,
                   const uint32_t* offs, int n) {
  void* params[DC_MAX_ARGS];
  if (!p_cuLaunchKernel) return DC_NOT_LOADED;
  if (n < 0 || n > DC_MAX_ARGS) return 1; /* CUDA_ERROR_INVALID_VALUE */
  for (int i = 0; i < n; i++) params[i] = (char*)vals + offs[i];
  return p_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, n ? params : NULL, NULL);
}

typedef struct {
  const char* syms; /* NUL-separated alternatives, ended by an empty name */
  void** slot;
} dc_sym;

#define DC_ENTRY(name, syms, params, args) {syms "\0", (void**)&p_##name},
static dc_sym cuda_syms[] = {DC_CUDA_API(DC_ENTRY)};
static dc_sym nvrtc_syms[] = {DC_NVRTC_API(DC_ENTRY){"nvrtcGetErrorString\0", (void**)&p_nvrtcGetErrorString}};

static dc_sym* table(int lib, int* n) {
  if (lib == DC_LIB_CUDA) {
    *n = (int)(sizeof cuda_syms / sizeof cuda_syms[0]);
    return cuda_syms;
  }
  *n = (int)(sizeof nvrtc_syms / sizeof nvrtc_syms[0]);
  return nvrtc_syms;
}

int dc_sym_count(int lib) {
  int n;
  table(lib, &n);
  return n;
}

const char* dc_sym_name(int lib, int i, int alt) {
  int n;
  dc_sym* t = table(lib, &n);
  if (i < 0 || i >= n) return NULL;
  const char* s = t[i].syms;
  for (; alt > 0 && *s; alt--) s += strlen(s) + 1;
  return *s ? s : NULL;
}

void dc_sym_set(int lib, int i, void* p) {
  int n;
  dc_sym* t = table(lib, &n);
  if (i >= 0 && i < n) *t[i].slot = p;
}

void dc_sym_clear(int lib) {
  int n;
  dc_sym* t = table(lib, &n);
  for (int i = 0; i < n; i++) *t[i].slot = NULL;
}
