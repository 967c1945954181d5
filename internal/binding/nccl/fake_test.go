package nccl

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeNCCL is a stand-in libnccl that checks the arguments each call
// receives against the values TestNCCLFake passes, so that the ABI
// plumbing (argument order and types, the 128-byte id passed by value, the
// handle written through a pointer) is tested without NCCL or a GPU. A
// call with unexpected arguments returns ncclInvalidArgument and describes
// what it got in the last-error buffer.
const fakeNCCL = `
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>

typedef struct { char internal[128]; } uid;
static char last[512];

#define FAIL(...) do { snprintf(last, sizeof last, __VA_ARGS__); return 4; } while (0)
#define COMM ((uintptr_t)0xC0FFEE0)

int ncclGetVersion(int* v) { *v = 22803; return 0; }

int ncclGetUniqueId(uid* id) {
  for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7 + 3);
  return 0;
}

int ncclCommInitRank(uintptr_t* comm, int n, uid id, int rank) {
  for (int i = 0; i < 128; i++)
    if ((unsigned char)id.internal[i] != (unsigned char)(255 - i)) FAIL("id byte %d is %d", i, (unsigned char)id.internal[i]);
  if (n != 3 || rank != 2) FAIL("init n=%d rank=%d", n, rank);
  *comm = COMM;
  return 0;
}

int ncclCommDestroy(uintptr_t c) { if (c != COMM) FAIL("destroy %#lx", (unsigned long)c); return 0; }
int ncclCommAbort(uintptr_t c) { return c == COMM ? 0 : 5; }
// A communicator other than COMM has lost a peer: ncclRemoteError (6).
int ncclCommGetAsyncError(uintptr_t c, int* e) { *e = c == COMM ? 0 : 6; return 0; }

int ncclAllReduce(const void* s, void* r, size_t n, int dt, int op, uintptr_t c, uintptr_t st) {
  if ((uintptr_t)s != 0x1110 || (uintptr_t)r != 0x2220 || n != 5 || dt != 7 || op != 2 || c != COMM || st != 0x3330)
    FAIL("allreduce %p %p %zu %d %d %#lx %#lx", s, r, n, dt, op, (unsigned long)c, (unsigned long)st);
  return 0;
}

int ncclReduceScatter(const void* s, void* r, size_t n, int dt, int op, uintptr_t c, uintptr_t st) {
  if ((uintptr_t)s != 0x1111 || (uintptr_t)r != 0x2221 || n != 6 || dt != 9 || op != 0 || c != COMM || st != 0x3331)
    FAIL("reducescatter %p %p %zu %d %d", s, r, n, dt, op);
  return 0;
}

int ncclAllGather(const void* s, void* r, size_t n, int dt, uintptr_t c, uintptr_t st) {
  if ((uintptr_t)s != 0x1112 || (uintptr_t)r != 0x2222 || n != ((size_t)1 << 33) || dt != 1 || c != COMM || st != 0x3332)
    FAIL("allgather %p %p %zu %d", s, r, n, dt);
  return 0;
}

int ncclBroadcast(const void* s, void* r, size_t n, int dt, int root, uintptr_t c, uintptr_t st) {
  if ((uintptr_t)s != 0x1113 || (uintptr_t)r != 0x2223 || n != 8 || dt != 4 || root != 1 || c != COMM || st != 0x3333)
    FAIL("broadcast %p %p %zu %d %d", s, r, n, dt, root);
  return 0;
}

int ncclSend(const void* b, size_t n, int dt, int peer, uintptr_t c, uintptr_t st) {
  if ((uintptr_t)b != 0x1114 || n != 9 || dt != 1 || peer != 1 || c != COMM || st != 0x3334)
    FAIL("send %p %zu %d %d", b, n, dt, peer);
  return 0;
}

int ncclRecv(void* b, size_t n, int dt, int peer, uintptr_t c, uintptr_t st) {
  if ((uintptr_t)b != 0x2224 || n != 9 || dt != 1 || peer != 1 || c != COMM || st != 0x3334)
    FAIL("recv %p %zu %d %d", b, n, dt, peer);
  return 0;
}

// A float32 factor of 0.75 (0x3f400000), read at creation: NCCL's first
// dynamic operator is ncclNumOps (5).
int ncclRedOpCreatePreMulSum(int* op, void* scalar, int dt, int residence, uintptr_t c) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)((unsigned char*)scalar)[i] << (8 * i);
  if (v != 0x3f400000 || dt != 7 || residence != 1 || c != COMM) FAIL("premulsum %#x %d %d", v, dt, residence);
  *op = 5;
  return 0;
}
int ncclRedOpDestroy(int op, uintptr_t c) { if (op != 5 || c != COMM) FAIL("destroy op %d", op); return 0; }

static int depth;
int ncclGroupStart(void) { depth++; return 0; }
int ncclGroupEnd(void) { if (depth == 0) FAIL("group end without start"); depth--; return 0; }

const char* ncclGetErrorString(int r) {
  switch (r) {
  case 4: return "fake invalid argument";
  case 5: return "fake invalid usage";
  }
  return "fake other error";
}

const char* ncclGetLastError(uintptr_t c) { (void)c; return last; }
`

// TestNCCLFake builds fakeNCCL with the C compiler and runs
// TestNCCLFakeChild in a child process that loads it: Load cannot be
// undone, and this process must stay free to load the real NCCL.
func TestNCCLFake(t *testing.T) {
	if !dynamicLoading {
		t.Skip("this build cannot dlopen")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "fake_nccl.c"), filepath.Join(dir, "libnccl-fake.so")
	if err := os.WriteFile(src, []byte(fakeNCCL), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake NCCL: %v\n%s", err, out)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestNCCLFakeChild$", "-test.v")
	cmd.Env = append(os.Environ(), EnvLib+"="+lib, "DETCOLL_TEST_NCCL_FAKE=1")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestNCCLFakeChild") {
		t.Fatal("the child did not run TestNCCLFakeChild")
	}
}

// TestNCCLFakeChild is TestNCCLFake's child; elsewhere it skips.
func TestNCCLFakeChild(t *testing.T) {
	if os.Getenv("DETCOLL_TEST_NCCL_FAKE") == "" {
		t.Skip("run by TestNCCLFake")
	}
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	if name := Library(); name != os.Getenv(EnvLib) {
		t.Errorf("Library() = %q; want %q", name, os.Getenv(EnvLib))
	}
	if err := Load(); err != nil {
		t.Errorf("second Load = %v; want nil", err)
	}
	if v, err := Version(); err != nil || v != 22803 {
		t.Errorf("Version() = %d, %v; want 22803", v, err)
	}
	id, err := GetUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range id {
		if b != byte(i*7+3) {
			t.Fatalf("id[%d] = %d; want %d", i, b, byte(i*7+3))
		}
	}
	for i := range id {
		id[i] = byte(255 - i)
	}
	comm, err := CommInitRank(3, id, 2)
	if err != nil || comm != 0xC0FFEE0 {
		t.Fatalf("CommInitRank = %#x, %v; want 0xc0ffee0", uintptr(comm), err)
	}
	op, err := comm.CreatePreMulSum([]byte{0x00, 0x00, 0x40, 0x3f}, Float32)
	if err != nil || op != 5 {
		t.Errorf("CreatePreMulSum = %v, %v; want ncclRedOp(5)", op, err)
	}
	for name, err := range map[string]error{
		"DestroyRedOp":  comm.DestroyRedOp(op),
		"GroupStart":    GroupStart(),
		"AllReduce":     comm.AllReduce(0x1110, 0x2220, 5, Float32, Max, 0x3330),
		"ReduceScatter": comm.ReduceScatter(0x1111, 0x2221, 6, Bfloat16, Sum, 0x3331),
		"AllGather":     comm.AllGather(0x1112, 0x2222, 1<<33, Uint8, 0x3332),
		"Broadcast":     comm.Broadcast(0x1113, 0x2223, 8, Int64, 1, 0x3333),
		"Send":          comm.Send(0x1114, 9, Uint8, 1, 0x3334),
		"Recv":          comm.Recv(0x2224, 9, Uint8, 1, 0x3334),
		"GroupEnd":      GroupEnd(),
		"AsyncError":    comm.AsyncError(),
		"Abort":         comm.Abort(),
		"Destroy":       comm.Destroy(),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// Failures: the error names the call and its arguments, carries
	// ncclGetErrorString's text and the last warning, and unwraps to the
	// code.
	err = comm.AllReduce(0x1110, 0x2220, 4, Float32, Max, 0x3330)
	want := "ncclAllReduce(0x1110, 0x2220, 4, float32, max, 13104): ncclInvalidArgument (4): fake invalid argument; " +
		"NCCL's last warning: allreduce 0x1110 0x2220 4 7 2 0xc0ffee0 0x3330"
	var ne *Error
	if !errors.As(err, &ne) || ne.Result != InvalidArgument || err.Error() != want {
		t.Errorf("bad AllReduce = %v; want %q", err, want)
	}
	_, err = CommInitRank(3, UniqueID{}, 2)
	if want := "ncclCommInitRank(3, 2): ncclInvalidArgument (4): fake invalid argument; NCCL's last warning: id byte 0 is 0"; err == nil || err.Error() != want {
		t.Errorf("CommInitRank with a wrong id = %v; want %q", err, want)
	}
	var r Result
	if err := Comm(1).AsyncError(); !errors.As(err, &r) || r != 6 {
		t.Errorf("AsyncError of a communicator that lost a peer = %v; want result 6", err)
	}
	if err := Comm(1).Abort(); !errors.As(err, &r) || r != InvalidUsage || !strings.Contains(err.Error(), "fake invalid usage") {
		t.Errorf("Abort of a bad communicator = %v; want ncclInvalidUsage with NCCL's text", err)
	}
}
