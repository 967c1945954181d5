// latency.c: the host cost of one ncclAllReduce call (the time its call
// takes to return, not the GPU's), and the synchronised latency, at W=1,
// to compare libdetcoll-nccl with the real NCCL without torch in between.
// Build on a machine with CUDA and NCCL:
//   gcc -O2 -I$CUDA/include testdata/latency.c -L$CUDA/lib64 -lcudart -lnccl -o latency
// and run it as is (the real NCCL) and under LD_PRELOAD=libdetcoll-nccl.so.
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  ncclUniqueId id;
  ncclComm_t comm;
  cudaStream_t s;
  if (ncclGetUniqueId(&id) || ncclCommInitRank(&comm, 1, id, 0)) return 1;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  enum { N = 2000 };
  static double call[N], sync[N];
  for (size_t bytes = 1024; bytes <= (64u << 20); bytes *= 64) {
    void* buf;
    cudaMalloc(&buf, bytes);
    for (int i = 0; i < 100; i++) ncclAllReduce(buf, buf, bytes / 2, ncclBfloat16, ncclSum, comm, s);
    cudaStreamSynchronize(s);
    for (int i = 0; i < N; i++) {
      double t0 = now_us();
      ncclResult_t r = ncclAllReduce(buf, buf, bytes / 2, ncclBfloat16, ncclSum, comm, s);
      double t1 = now_us();
      cudaStreamSynchronize(s);
      double t2 = now_us();
      if (r != ncclSuccess) {
        fprintf(stderr, "ncclAllReduce: %s\n", ncclGetErrorString(r));
        return 1;
      }
      call[i] = t1 - t0;
      sync[i] = t2 - t0;
    }
    qsort(call, N, sizeof call[0], cmp);
    qsort(sync, N, sizeof sync[0], cmp);
    printf("%9zu B  call median %7.2f us  p90 %7.2f us  synchronised median %7.2f us  p90 %7.2f us\n", bytes,
           call[N / 2], call[N * 9 / 10], sync[N / 2], sync[N * 9 / 10]);
    cudaFree(buf);
  }
  ncclCommDestroy(comm);
  return 0;
}
