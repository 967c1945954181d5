//go:build cgo

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The library as a C program sees it: built with go build -buildmode=
// c-shared, linked by gcc into testdata/client.c, over testdata/
// fakenccl.c as the real NCCL (no GPU needed). Each test runs the client
// with steps and reads its lines.

// torchSymbols are the NCCL functions PyTorch 2.11 (cu130) imports from
// libnccl.so.2 (measured on the GPU machine with nm -D), plus the ones
// the library exports besides (ncclCommCuDevice).
var torchSymbols = []string{
	"ncclAllGather", "ncclAllReduce", "ncclAlltoAll", "ncclBcast", "ncclBroadcast", "ncclCommAbort",
	"ncclCommCount", "ncclCommDeregister", "ncclCommDestroy", "ncclCommFinalize", "ncclCommGetAsyncError",
	"ncclCommInitAll", "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitRankScalable",
	"ncclCommRegister", "ncclCommShrink", "ncclCommSplit", "ncclCommUserRank", "ncclCommWindowDeregister",
	"ncclCommWindowRegister", "ncclDevCommCreate", "ncclDevCommDestroy", "ncclGetErrorString",
	"ncclGetLastError", "ncclGetUniqueId", "ncclGetVersion", "ncclGroupEnd", "ncclGroupSimulateEnd",
	"ncclGroupStart", "ncclMemAlloc", "ncclMemFree", "ncclRecv", "ncclRedOpCreatePreMulSum",
	"ncclRedOpDestroy", "ncclReduce", "ncclReduceScatter", "ncclSend",
}

var extraSymbols = []string{"ncclCommCuDevice"}

type built struct {
	dir, lib, fake, client string
	err                    error
}

// buildDir is buildOnce's directory, once made.
var buildDir string

var buildOnce = sync.OnceValue(func() built {
	dir, err := os.MkdirTemp("", "libdetcoll-nccl-test")
	if err != nil {
		return built{err: err}
	}
	buildDir = dir
	b := built{dir: dir, lib: filepath.Join(dir, "libdetcoll-nccl.so"), fake: filepath.Join(dir, "libnccl.so.2"),
		client: filepath.Join(dir, "client")}
	steps := [][]string{
		{"go", "build", "-buildmode=c-shared", "-o", b.lib, "."},
		{"gcc", "-shared", "-fPIC", "-o", b.fake, "testdata/fakenccl.c"},
		{"gcc", "-o", b.client, "testdata/client.c", "-L" + dir, "-ldetcoll-nccl", "-Wl,-rpath," + dir},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			b.err = &buildError{strings.Join(s, " "), string(out), err}
			return b
		}
	}
	return b
})

// TestMain removes what buildOnce built: the library, the fake NCCL and
// the client (6 MB a run, which nothing else would remove).
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

type buildError struct {
	cmd, out string
	err      error
}

func (e *buildError) Error() string { return e.cmd + ": " + e.err.Error() + "\n" + e.out }

func build(t *testing.T) built {
	t.Helper()
	for _, tool := range []string{"go", "gcc", "nm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here: the library's C tests need go, gcc and nm", tool)
		}
	}
	b := buildOnce()
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b
}

// run runs the client with env and steps; it returns its lines and the
// fake NCCL's log.
func run(t *testing.T, b built, env []string, steps ...string) (lines []string, log []string) {
	t.Helper()
	lines, log, _ = runErr(t, b, env, steps...)
	return lines, log
}

// runErr is run that returns the client's standard error too.
func runErr(t *testing.T, b built, env []string, steps ...string) (lines, log []string, stderr string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "fake.log")
	cmd := exec.Command(b.client, steps...)
	cmd.Env = append(append(os.Environ(), "FAKE_NCCL_LOG="+logPath, "DETCOLL_LIBCUDA=/nonexistent/libcuda.so.1"), env...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client %v: %v\n%s%s", steps, err, out, errb.String())
	}
	fl, _ := os.ReadFile(logPath)
	return strings.Split(strings.TrimSpace(string(out)), "\n"), strings.Fields(strings.ReplaceAll(string(fl), " ", "_")), errb.String()
}

// TestExports: the library's dynamic symbols are the NCCL functions
// PyTorch imports and nothing else: no Go runtime, cgo or detcoll name
// reaches the process it is loaded into (exports.so).
func TestExports(t *testing.T) {
	b := build(t)
	out, err := exec.Command("nm", "-D", "--defined-only", b.lib).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			got = append(got, f[2])
		} else {
			t.Errorf("nm line %q", line)
		}
	}
	want := slices.Concat(torchSymbols, extraSymbols)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("exported symbols:\n got %v\nwant %v", got, want)
	}
}

// TestNoRealNCCL: without a real NCCL, calls fail with ncclSystemError and
// say why; the version is nccl.h 2.28's and the strings are NCCL's.
func TestNoRealNCCL(t *testing.T) {
	b := build(t)
	lines, _ := run(t, b, []string{"DETCOLL_REAL_NCCL=/nonexistent/libnccl.so.2"}, "version", "uniqueid", "init", "sum", "errorstring")
	want := []string{"version 0 22800", "uniqueid 2", "init 2", "sum 2", "errorstring invalid usage"}
	check(t, lines, want, "cannot load the real NCCL", "DETCOLL_REAL_NCCL")
}

// TestNeverItself: a "real NCCL" that is the library itself is refused.
func TestNeverItself(t *testing.T) {
	b := build(t)
	lines, _ := run(t, b, []string{"DETCOLL_REAL_NCCL=" + b.lib}, "uniqueid")
	check(t, lines, []string{"uniqueid 2"}, "is this library, not the real NCCL")
}

// TestForwarding: over the fake NCCL, with no GPU for detcoll, everything
// reaches the real NCCL unchanged in delegate mode: the communicator, the
// reductions (detcoll cannot set up: no libcuda), a PreMulSum operator
// (made and destroyed by the real NCCL, under its number), the rest;
// strict mode refuses the float reductions, saying why, and forwards the
// rest, exact integer reductions included.
func TestForwarding(t *testing.T) {
	b := build(t)
	real := "DETCOLL_REAL_NCCL=" + b.fake
	lines, log := run(t, b, []string{real}, "version", "uniqueid", "init", "sum", "max", "prod", "intsum", "premul", "premuldevice",
		"send", "group", "async", "destroy", "errorstring")
	check(t, lines, []string{"version 0 22803", "uniqueid 0", "init 0", "sum 0", "max 0", "prod 0", "intsum 0", "premul 0",
		"premuldevice 0", "send 0", "group 0", "async 0 0", "destroy 0", "errorstring fake error string"})
	wantLog := []string{"getuniqueid", "initrank", "allreduce_n=64_dt=7_op=0", "allreduce_n=64_dt=7_op=2", "allreduce_n=64_dt=7_op=1",
		"allreduce_n=64_dt=2_op=0", "premulcreate_op=5_dt=7_residence=1", "reducescatter_n=64_dt=7_op=5", "premuldestroy_op=5",
		"premulcreate_op=6_dt=9_residence=0", "allreduce_n=64_dt=9_op=6", "premuldestroy_op=6",
		"send_n=8_peer=0", "groupstart", "groupend", "destroy"}
	if !slices.Equal(log, wantLog) {
		t.Errorf("the real NCCL saw\n %q\nwant %q", log, wantLog)
	}

	lines, log = run(t, b, []string{real, "DETCOLL_NCCL_MODE=strict"}, "init", "sum", "max", "prod", "intsum", "intmax", "premul", "send", "destroy")
	check(t, lines, []string{"init 0", "sum 5", "max 5", "prod 5", "intsum 0", "intmax 0", "premul 5", "send 0", "destroy 0"}, "DETCOLL_NCCL_MODE=strict")
	if want := []string{"initrank", "allreduce_n=64_dt=2_op=0", "reducescatter_n=64_dt=4_op=2", "premulcreate_op=5_dt=7_residence=1",
		"send_n=8_peer=0", "destroy"}; !slices.Equal(log, want) {
		t.Errorf("strict: the real NCCL saw %q, want %q", log, want)
	}
	if !strings.Contains(lines[1], "could not set it up") || !strings.Contains(lines[2], "could not set it up") ||
		!strings.Contains(lines[3], "with prod is not one detcoll makes deterministic") || !strings.Contains(lines[6], "could not set it up") {
		t.Errorf("strict mode's reasons: %q", lines)
	}
}

// TestPreMulSumRegistered: the library tells its Go side of the
// operators the real NCCL makes: a call of another type than its
// operator's is refused in strict mode naming the operator's type, before
// the communicator's setup is tried.
func TestPreMulSumRegistered(t *testing.T) {
	b := build(t)
	lines, log := run(t, b, []string{"DETCOLL_REAL_NCCL=" + b.fake, "DETCOLL_NCCL_MODE=strict"}, "init", "premulmismatch", "destroy")
	check(t, lines, []string{"init 0", "premulmismatch 5", "destroy 0"}, "with a premulsum operator made for float32")
	if want := []string{"initrank", "premulcreate_op=5_dt=7_residence=1", "premuldestroy_op=5", "destroy"}; !slices.Equal(log, want) {
		t.Errorf("the real NCCL saw %q, want %q", log, want)
	}
}

// TestStrictSaysWhyOnStderr: vLLM and SGLang print ncclGetErrorString's
// text, not ncclGetLastError's, so a refusal's reason goes to stderr as
// well, once per reason; delegate mode's hand-offs are said there too.
func TestStrictSaysWhyOnStderr(t *testing.T) {
	b := build(t)
	real := "DETCOLL_REAL_NCCL=" + b.fake
	_, _, stderr := runErr(t, b, []string{real, "DETCOLL_NCCL_MODE=strict"}, "init", "prod", "prod", "intsum")
	if n := strings.Count(stderr, "with prod is not one detcoll makes deterministic (detcoll has no product); refused"); n != 1 {
		t.Errorf("stderr says the product's refusal %d times; want once:\n%s", n, stderr)
	}
	if strings.Contains(stderr, "int32") {
		t.Errorf("stderr mentions the exact integer sum:\n%s", stderr)
	}
	_, _, stderr = runErr(t, b, []string{real}, "init", "max")
	if !strings.Contains(stderr, "handed to the real NCCL") {
		t.Errorf("delegate mode's stderr:\n%s", stderr)
	}
}

// TestUnknownCommunicator: a communicator the library did not see made
// (ncclCommGrow, a program that calls the real NCCL's init through dlsym)
// is handed, saying so, in delegate mode, and refused in strict mode.
func TestUnknownCommunicator(t *testing.T) {
	b := build(t)
	real := "DETCOLL_REAL_NCCL=" + b.fake
	lines, log := run(t, b, []string{real}, "foreign")
	check(t, lines, []string{"foreign 0"})
	if !slices.Equal(log, []string{"allreduce_n=64_dt=7_op=0"}) {
		t.Errorf("delegate: the real NCCL saw %q", log)
	}
	lines, log = run(t, b, []string{real, "DETCOLL_NCCL_MODE=strict"}, "foreign")
	check(t, lines, []string{"foreign 5"}, "did not see made")
	if len(log) != 0 {
		t.Errorf("strict: the real NCCL saw %q", log)
	}
}

// TestGroupsKeepTheirOperations: inside a (nested) group, with no GPU for
// detcoll, the sums stay in the group, handed in the order they were made
// with the group's other operations, and the group ends once, at the
// outermost ncclGroupEnd; a Reduce to each root is handed alike.
func TestGroupsKeepTheirOperations(t *testing.T) {
	b := build(t)
	real := "DETCOLL_REAL_NCCL=" + b.fake
	lines, log := run(t, b, []string{real}, "init", "groupsum", "reduce", "destroy")
	check(t, lines, []string{"init 0", "groupsum 0", "reduce 0", "destroy 0"})
	want := []string{"initrank", "groupstart", "groupstart", "send_n=8_peer=0", "allreduce_n=64_dt=7_op=0", "groupend",
		"reducescatter_n=8_dt=6_op=0", "groupend", "reduce_n=64_dt=9_op=0_root=0", "reduce_n=64_dt=9_op=0_root=1", "destroy"}
	if !slices.Equal(log, want) {
		t.Errorf("the real NCCL saw\n %q\nwant %q", log, want)
	}
}

// TestReportFile: DETCOLL_NCCL_REPORT=FILE writes, at exit, the calls
// served, handed and refused by operation, type and reason, and the
// forwarded ones by function.
func TestReportFile(t *testing.T) {
	b := build(t)
	path := filepath.Join(t.TempDir(), "report.json")
	run(t, b, []string{"DETCOLL_REAL_NCCL=" + b.fake, "DETCOLL_NCCL_REPORT=" + path}, "init", "sum", "sum", "intsum", "premul", "send", "send", "destroy")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	var rep struct {
		Schema int
		Calls  []struct {
			Operation, DType, Op, Outcome, Reason string
			Calls                                 int64
		}
		Forwarded map[string]int64
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	got := map[string]int64{}
	for _, r := range rep.Calls {
		got[r.Operation+" "+r.DType+" "+r.Op+" "+r.Outcome] += r.Calls
	}
	if got["AllReduce float32 sum handed"] != 2 || got["AllReduce int32 sum exact"] != 1 || got["ReduceScatter float32 premulsum handed"] != 1 ||
		rep.Forwarded["ncclSend"] != 2 || rep.Schema != 1 {
		t.Errorf("report:\n%s", data)
	}
}

// TestKindsAgree: forward.c numbers the reductions and the host factor's
// residence as ncclshim does.
func TestKindsAgree(t *testing.T) {
	if !kindsAgree() {
		t.Error("shim.h's DC_ALLREDUCE, DC_REDUCESCATTER, DC_REDUCE or DC_SCALAR_HOST differ from ncclshim's")
	}
}

// TestGroupSimulateEndEndsTheGroup: ncclGroupSimulateEnd closes a group as
// ncclGroupEnd does, so a communicator made after it is not "inside a
// group": its first sum tries the setup (which fails here, no GPU) rather
// than being refused for a group that ended.
func TestGroupSimulateEndEndsTheGroup(t *testing.T) {
	b := build(t)
	lines, log := run(t, b, []string{"DETCOLL_REAL_NCCL=" + b.fake, "DETCOLL_NCCL_MODE=strict"}, "groupsim", "init", "sum")
	check(t, lines, []string{"groupsim 0", "init 0", "sum 5"})
	if !strings.Contains(lines[2], "could not set it up") {
		t.Errorf("the sum after ncclGroupSimulateEnd: %q; want the setup's failure, not a group's refusal", lines[2])
	}
	if want := []string{"groupstart", "groupsimulateend", "initrank"}; !slices.Equal(log, want) {
		t.Errorf("the real NCCL saw %q, want %q", log, want)
	}
}

// TestBadSettings: a bad variable fails every call that needs detcoll,
// naming it.
func TestBadSettings(t *testing.T) {
	b := build(t)
	lines, _ := run(t, b, []string{"DETCOLL_REAL_NCCL=" + b.fake, "DETCOLL_CAPACITY=lots"}, "init", "sum")
	check(t, lines, []string{"init 0", "sum 5"}, "DETCOLL_CAPACITY")
}

// check compares the client's lines with want, each a prefix of its line,
// and requires every failing line (after a result other than 0) to hold
// all of says.
func check(t *testing.T, lines, want []string, says ...string) {
	t.Helper()
	if len(lines) != len(want) {
		t.Fatalf("client said %q, want %d lines like %q", lines, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want it to start %q", i, lines[i], w)
		}
		if f := strings.Fields(w); len(f) == 2 && f[1] != "0" && strings.Trim(f[1], "0123456789") == "" {
			for _, s := range says {
				if !strings.Contains(lines[i], s) {
					t.Errorf("line %d: %q does not say %q", i, lines[i], s)
				}
			}
		}
	}
}

// TestLateLoad: Python's ctypes (detcoll.torch.enable) loads the library
// after the program started, where only a little static TLS is left: the
// library's must stay a few words (a 2 KiB __thread buffer made that load
// fail with "cannot allocate memory in static TLS block", seen under
// Python 3.11 and 3.12).
func TestLateLoad(t *testing.T) {
	b := build(t)
	out, err := exec.Command("readelf", "-lW", b.lib).Output()
	if err != nil {
		t.Skipf("no readelf: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[0] == "TLS" {
			var memsz int64
			if _, err := fmt.Sscanf(f[5], "0x%x", &memsz); err != nil {
				t.Fatalf("TLS line %q: %v", line, err)
			}
			if memsz > 64 {
				t.Errorf("the library's static TLS is %d bytes; keep it a few words (use pthread keys)", memsz)
			}
		}
	}
	if py, err := exec.LookPath("python3"); err == nil {
		cmd := exec.Command(py, "-c", "import ctypes, os, sys; ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_GLOBAL)", b.lib)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("python3 ctypes load: %v\n%s", err, out)
		}
	}
}

// TestCPUProfile: DETCOLL_NCCL_CPUPROFILE profiles the Go side and writes
// the profile at exit.
func TestCPUProfile(t *testing.T) {
	b := build(t)
	dir := t.TempDir()
	run(t, b, []string{"DETCOLL_REAL_NCCL=" + b.fake, "DETCOLL_NCCL_CPUPROFILE=" + filepath.Join(dir, "cpu-%p.prof")}, "init", "sum", "destroy")
	matches, _ := filepath.Glob(filepath.Join(dir, "cpu-*.prof"))
	if len(matches) != 1 {
		t.Fatalf("profiles %v; want one", matches)
	}
	if fi, err := os.Stat(matches[0]); err != nil || fi.Size() == 0 {
		t.Errorf("profile %s: %v, %v bytes", matches[0], err, fi)
	}
}
