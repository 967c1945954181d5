// launchcost.cu: the host's cost of queueing one kernel on this machine,
// by the kernel's parameter size and shared memory, beside a memset: what
// a library that launches one kernel per call pays at least (issue 21,
// section 4). nvcc -O2 -arch=sm_90 -o launchcost launchcost.cu
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

struct Work { unsigned long long in, out, bytes, off; };
struct Args {  // detcoll's parameter: 7 words, 8 ints, 8 work entries (360 bytes)
  unsigned long long w[7];
  unsigned int u[8];
  Work work[8];
};

__global__ void empty() {}
__global__ void __launch_bounds__(512) with_args(Args a) {
  if (a.u[0] == 12345 && threadIdx.x == 0) a.work[0].out = 1;
}
__global__ void __launch_bounds__(512) with_shared(Args a) {
  __shared__ unsigned long long s[2048];  // 16 KiB, as a block's state might take
  s[threadIdx.x] = a.w[0];
  __syncthreads();
  if (a.u[0] == 12345) a.work[0].out = s[0];
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

template <typename F>
static void time_it(const char* what, cudaStream_t s, F f) {
  const int n = 20000;
  for (int i = 0; i < 512; i++) f();
  cudaStreamSynchronize(s);
  double spent = 0;
  for (int i = 0; i < n; i += 256) {
    double t = now_us();
    for (int j = 0; j < 256; j++) f();
    spent += now_us() - t;
    cudaStreamSynchronize(s);  // the queue never fills: the host's cost only
  }
  printf("%-44s %6.2f us per call\n", what, spent / (n / 256 * 256));
}

int main() {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  void* buf;
  cudaMalloc(&buf, 1 << 20);
  Args a = {};
  time_it("cudaMemsetAsync 1 KiB", s, [&] { cudaMemsetAsync(buf, 0, 1024, s); });
  time_it("empty kernel, 1 block of 32", s, [&] { empty<<<1, 32, 0, s>>>(); });
  time_it("360-byte parameter, 1 block of 512", s, [&] { with_args<<<1, 512, 0, s>>>(a); });
  time_it("360-byte parameter, 132 blocks of 512", s, [&] { with_args<<<132, 512, 0, s>>>(a); });
  time_it("360-byte parameter, 16 KiB shared, 1 block", s, [&] { with_shared<<<1, 512, 0, s>>>(a); });
  return 0;
}
