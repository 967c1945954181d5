// nccl_abort.cu: does ncclCommAbort return when the peer process is killed
// in the middle of collectives, with both processes on one GPU as two
// virtual hosts (distinct NCCL_HOSTID, sockets over loopback), NCCL alone,
// no detcoll? The question behind run 16's hung kills.
//
// Usage: RANK=r MODE=blocking|nonblocking|two KILL_MS=300 ./nccl_abort idfile
// MODE=two is detcoll's rail: two blocking communicators, the data's
// 1 MiB all-gathers on one stream and the signatures' 64-byte all-gathers
// on another, both aborted one after the other on one thread. PIPE=k
// queues k data all-gathers between waits, as pipelined callers do.
// Rank 1 SIGKILLs itself KILL_MS after its communicator is up, amid a loop
// of 1 MiB all-gathers; rank 0 polls its stream and ncclCommGetAsyncError,
// and on the first error (or 3 s after the kill without one) calls
// ncclCommAbort on another thread, then cudaFree. Rank 0 prints what
// happened, in ms from the kill.
#include <cuda_runtime.h>
#include <nccl.h>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <time.h>
#include <unistd.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

static double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// settle waits for a nonblocking communicator's operation to finish queuing.
static ncclResult_t settle(ncclComm_t c, ncclResult_t r) {
  while (r == ncclInProgress) ncclCommGetAsyncError(c, &r);
  return r;
}

static double read_kill(const std::string& f) {
  FILE* k = fopen(f.c_str(), "r");
  double t = -1;
  if (k) { if (fscanf(k, "%lf", &t) != 1) t = -1; fclose(k); }
  return t;
}

int main(int argc, char** argv) {
  int rank = atoi(getenv("RANK"));
  bool nonblocking = strcmp(getenv("MODE"), "nonblocking") == 0, two = strcmp(getenv("MODE"), "two") == 0;
  double kill_ms = atof(getenv("KILL_MS"));
  int pipe = getenv("PIPE") ? atoi(getenv("PIPE")) : 1;  // all-gathers queued between waits
  std::string idfile = argv[1], killfile = std::string(argv[1]) + ".kill";
  CK(cudaSetDevice(0));
  ncclUniqueId id, id2;
  if (rank == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess || ncclGetUniqueId(&id2) != ncclSuccess) { printf("no unique id\n"); return 1; }
    std::string tmp = idfile + ".tmp";
    FILE* f = fopen(tmp.c_str(), "wb"); fwrite(&id, sizeof id, 1, f); fwrite(&id2, sizeof id2, 1, f); fclose(f); rename(tmp.c_str(), idfile.c_str());
  } else {
    FILE* f = nullptr;
    while (!(f = fopen(idfile.c_str(), "rb"))) usleep(1000);
    if (fread(&id, sizeof id, 1, f) != 1 || fread(&id2, sizeof id2, 1, f) != 1) return 1;
    fclose(f);
  }
  ncclComm_t comm;
  ncclResult_t r;
  if (nonblocking) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    r = ncclCommInitRankConfig(&comm, 2, id, rank, &cfg);
  } else {
    r = ncclCommInitRank(&comm, 2, id, rank);
  }
  if ((r = settle(comm, r)) != ncclSuccess) { printf("rank %d: init: %s\n", rank, ncclGetErrorString(r)); return 1; }
  ncclComm_t ctrl = nullptr;
  if (two && (r = ncclCommInitRank(&ctrl, 2, id2, rank)) != ncclSuccess) { printf("rank %d: init ctrl: %s\n", rank, ncclGetErrorString(r)); return 1; }
  cudaStream_t s, s2;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  void *sig;
  CK(cudaMalloc(&sig, 192));
  const size_t n = 1 << 20;
  void *in, *out;
  CK(cudaMalloc(&in, n)); CK(cudaMalloc(&out, 2 * n));
  double up = now_ms(), detected = -1;
  const char* why = "";
  long calls = 0;
  for (;;) {
    if (two && (r = ncclAllGather(sig, (char*)sig + 64, 64, ncclUint8, ctrl, s2)) != ncclSuccess) { why = ncclGetErrorString(r); detected = now_ms(); break; }
    while (two && cudaStreamQuery(s2) == cudaErrorNotReady && detected < 0) {
      ncclResult_t ae = ncclSuccess;
      ncclCommGetAsyncError(ctrl, &ae);
      double kt = read_kill(killfile);
      if (ae != ncclSuccess && ae != ncclInProgress) { why = ncclGetErrorString(ae); detected = now_ms(); }
      else if (kt > 0 && now_ms() - kt > 3000) { why = "no error 3 s after the kill"; detected = now_ms(); }
      usleep(200);
    }
    if (detected >= 0) break;
    for (int k = 0; k < pipe && r == ncclSuccess; k++) r = settle(comm, ncclAllGather(in, out, n, ncclUint8, comm, s));
    if (r != ncclSuccess) { why = ncclGetErrorString(r); detected = now_ms(); break; }
    calls++;
    if (rank == 1 && now_ms() - up > kill_ms) {
      FILE* k = fopen(killfile.c_str(), "w"); fprintf(k, "%.3f\n", now_ms()); fclose(k);
      raise(SIGKILL);
    }
    while (cudaStreamQuery(s) == cudaErrorNotReady && detected < 0) {
      ncclResult_t ae = ncclSuccess;
      ncclCommGetAsyncError(comm, &ae);
      double kt = read_kill(killfile);
      if (ae != ncclSuccess && ae != ncclInProgress) { why = ncclGetErrorString(ae); detected = now_ms(); }
      else if (kt > 0 && now_ms() - kt > 3000) { why = "no error 3 s after the kill"; detected = now_ms(); }
      usleep(200);
    }
    if (detected >= 0) break;
  }
  double kt = read_kill(killfile);
  printf("mode=%s pipe=%d calls=%ld detected %.1f ms after the kill: %s\n", getenv("MODE"), pipe, calls, detected - kt, why);
  std::atomic<int> aborted{0}, freed{0};
  double abort_end = 0;
  double data_end = 0;
  std::thread([&] {
    ncclCommAbort(comm);
    data_end = now_ms();
    if (two) ncclCommAbort(ctrl);
    abort_end = now_ms();
    aborted = 1;
  }).detach();
  for (int i = 0; i < 1000 && !aborted; i++) usleep(10000);
  if (!aborted) {
    printf("ABORT STUCK: ncclCommAbort had not returned %.0f ms after the kill (the data's %s)\n", now_ms() - kt, data_end > 0 ? "had" : "had not either");
    fflush(stdout);
    _exit(2);
  }
  printf("abort returned %.1f ms after the kill (%.1f ms after it was called)\n", abort_end - kt, abort_end - detected);
  std::thread([&] { cudaFree(in); freed = 1; }).detach();
  for (int i = 0; i < 300 && !freed; i++) usleep(10000);
  printf(freed ? "cudaFree returned\n" : "FREE STUCK: cudaFree had not returned after 3 s\n");
  fflush(stdout);
  _exit(freed ? 0 : 3);
}
