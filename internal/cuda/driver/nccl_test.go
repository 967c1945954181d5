package driver

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/num"
)

func TestNCCLResultError(t *testing.T) {
	for _, tc := range []struct {
		r    NCCLResult
		want string
	}{
		{NCCLSuccess, "ncclSuccess (0)"},
		{NCCLUnhandledCudaError, "ncclUnhandledCudaError (1)"},
		{NCCLInvalidArgument, "ncclInvalidArgument (4)"},
		{NCCLRemoteError, "ncclRemoteError (6)"},
		{NCCLInProgress, "ncclInProgress (7)"},
		{NCCLResult(42), "ncclResult(42) (42)"},
	} {
		if got := tc.r.Error(); got != tc.want {
			t.Errorf("NCCLResult(%d).Error() = %q; want %q", int(tc.r), got, tc.want)
		}
	}
	for r, name := range ncclResultNames {
		if !strings.HasPrefix(name, "nccl") || r.Name() != name {
			t.Errorf("ncclResultNames[%d] = %q; want an nccl name equal to Name()", int(r), name)
		}
	}
}

func TestNCCLErrorFormat(t *testing.T) {
	const text = "invalid argument (run with NCCL_DEBUG=WARN for details)"
	args := []any{DevicePtr(0x1000), DevicePtr(0x2000), 16, NCCLFloat32, NCCLSum, uintptr(0)}
	for _, tc := range []struct {
		name         string
		text, detail string
		want         string
	}{
		{"text", text, "", "ncclAllReduce(0x1000, 0x2000, 16, float32, sum, 0): ncclInvalidArgument (4): " + text},
		{"detail repeats text", text, " " + text + "\n", "ncclAllReduce(0x1000, 0x2000, 16, float32, sum, 0): ncclInvalidArgument (4): " + text},
		{"detail", text, "AllReduce: invalid type 99\n",
			"ncclAllReduce(0x1000, 0x2000, 16, float32, sum, 0): ncclInvalidArgument (4): " + text +
				"; NCCL's last warning: AllReduce: invalid type 99"},
		{"no text", "", "", "ncclAllReduce(0x1000, 0x2000, 16, float32, sum, 0): ncclInvalidArgument (4)"},
	} {
		err := error(newNCCLError(NCCLInvalidArgument, tc.text, tc.detail, "ncclAllReduce", args...))
		if got := err.Error(); got != tc.want {
			t.Errorf("%s: Error() = %q; want %q", tc.name, got, tc.want)
		}
		var ne *NCCLError
		var r NCCLResult
		if !errors.As(err, &ne) || !errors.As(err, &r) || r != NCCLInvalidArgument {
			t.Errorf("%s: errors.As found %v, %v; want the *NCCLError and ncclInvalidArgument", tc.name, ne, r)
		}
		if errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: an NCCL failure matches ErrUnavailable", tc.name)
		}
	}
}

func TestNCCLDataTypeOf(t *testing.T) {
	mapped := map[NCCLDataType]bool{}
	for dt := num.Invalid; dt <= num.Uint64Type+1; dt++ {
		nt, ok := NCCLDataTypeOf(dt)
		wantOK := dt.Valid() && dt != num.Int16Type && dt != num.Uint16Type
		if ok != wantOK {
			t.Errorf("NCCLDataTypeOf(%v) ok = %v; want %v", dt, ok, wantOK)
			continue
		}
		if !ok {
			continue
		}
		// NCCL's names follow detcoll's, so equal names mean the same type.
		if nt.String() != dt.String() {
			t.Errorf("NCCLDataTypeOf(%v) = %v", dt, nt)
		}
		if mapped[nt] {
			t.Errorf("NCCLDataTypeOf(%v) = %v, which another type maps to", dt, nt)
		}
		mapped[nt] = true
	}
	if len(mapped) != len(ncclDataTypeNames) {
		t.Errorf("%d NCCL types mapped; want all %d", len(mapped), len(ncclDataTypeNames))
	}
	// The ABI values (nccl.h).
	for nt, want := range map[NCCLDataType]int{NCCLInt8: 0, NCCLUint8: 1, NCCLInt32: 2, NCCLUint32: 3, NCCLInt64: 4,
		NCCLUint64: 5, NCCLFloat16: 6, NCCLFloat32: 7, NCCLFloat64: 8, NCCLBfloat16: 9} {
		if int(nt) != want {
			t.Errorf("%v = %d; want %d", nt, int(nt), want)
		}
	}
	if got := NCCLDataType(12).String(); got != "ncclDataType(12)" {
		t.Errorf("NCCLDataType(12).String() = %q", got)
	}
	for op, want := range map[NCCLRedOp]string{NCCLSum: "sum", NCCLProd: "prod", NCCLMax: "max", NCCLMin: "min",
		NCCLAvg: "avg", NCCLRedOp(9): "ncclRedOp(9)"} {
		if got := op.String(); got != want {
			t.Errorf("NCCLRedOp(%d).String() = %q; want %q", int(op), got, want)
		}
	}
}

// skipIfNCCLLoaded skips tests of the unloaded state: once loaded, NCCL
// stays loaded for the life of the test binary.
func skipIfNCCLLoaded(t *testing.T) {
	t.Helper()
	if name := NCCLLibrary(); name != "" {
		t.Skipf("NCCL (%s) already loaded by an earlier test", name)
	}
}

func TestLoadNCCLMissingLibrary(t *testing.T) {
	skipIfNCCLLoaded(t)
	missing := filepath.Join(t.TempDir(), "libnccl.so.2")
	t.Setenv(EnvLibNCCL, missing)
	err := LoadNCCL()
	if err == nil {
		t.Fatalf("LoadNCCL with %s=%s succeeded; want an error", EnvLibNCCL, missing)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("LoadNCCL() = %v; want an error matching ErrUnavailable", err)
	}
	if dynamicLoading && (!strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "from "+EnvLibNCCL)) {
		t.Errorf("LoadNCCL() = %q; want the message to name %s and %s", err, missing, EnvLibNCCL)
	}
	t.Logf("LoadNCCL() = %v", err)
	if name := NCCLLibrary(); name != "" {
		t.Errorf("NCCLLibrary() = %q after a failed LoadNCCL; want empty", name)
	}
}

// TestLoadIgnoresNCCL checks that a missing NCCL leaves the driver alone:
// Load fails or succeeds as it would anyway, never because of NCCL.
func TestLoadIgnoresNCCL(t *testing.T) {
	t.Setenv(EnvLibNCCL, filepath.Join(t.TempDir(), "libnccl.so.2"))
	err := Load()
	if err == nil {
		if err := Unload(); err != nil {
			t.Error(err)
		}
		return
	}
	if strings.Contains(strings.ToLower(err.Error()), "nccl") {
		t.Errorf("Load() = %v; it must not depend on NCCL", err)
	}
}

func TestLoadNCCLNotNCCL(t *testing.T) {
	if !dynamicLoading {
		t.Skip("this build cannot dlopen")
	}
	skipIfNCCLLoaded(t)
	t.Setenv(EnvLibNCCL, "libc.so.6") // on every Linux system, with no NCCL symbol
	err := LoadNCCL()
	if err == nil {
		t.Fatal("LoadNCCL with libc as NCCL succeeded; want an error")
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "dlsym ncclGetVersion in libc.so.6") {
		t.Errorf("LoadNCCL() = %q; want ErrUnavailable naming the missing symbol", err)
	}
	if _, err := NCCLVersion(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("NCCLVersion after a failed LoadNCCL = %v; want ErrUnavailable", err)
	}
}

func TestNCCLCallsBeforeLoad(t *testing.T) {
	skipIfNCCLLoaded(t)
	var c NCCLComm
	for _, tc := range []struct {
		name string
		call func() error
		cgo  string // the message start in the cgo build
	}{
		{"NCCLVersion", func() error { _, err := NCCLVersion(); return err }, "ncclGetVersion(): "},
		{"NCCLGetUniqueID", func() error { _, err := NCCLGetUniqueID(); return err }, "ncclGetUniqueId(): "},
		{"NCCLCommInitRank", func() error { _, err := NCCLCommInitRank(2, [NCCLUniqueIDBytes]byte{}, 1); return err },
			"ncclCommInitRank(2, 1): "},
		{"AllReduce", func() error { return c.AllReduce(0x100, 0x200, 3, NCCLFloat32, NCCLSum, 0) },
			"ncclAllReduce(0x100, 0x200, 3, float32, sum, 0): "},
		{"ReduceScatter", func() error { return c.ReduceScatter(0x100, 0x200, 3, NCCLBfloat16, NCCLMax, 0) },
			"ncclReduceScatter(0x100, 0x200, 3, bfloat16, max, 0): "},
		{"AllGather", func() error { return c.AllGather(0x100, 0x200, 3, NCCLUint8, 0) },
			"ncclAllGather(0x100, 0x200, 3, uint8, 0): "},
		{"Broadcast", func() error { return c.Broadcast(0x100, 0x100, 3, NCCLInt64, 1, 0) },
			"ncclBroadcast(0x100, 0x100, 3, int64, 1, 0): "},
		{"Destroy", c.Destroy, "ncclCommDestroy(0): "},
		{"Abort", c.Abort, "ncclCommAbort(0): "},
		{"NCCLGroupStart", NCCLGroupStart, "ncclGroupStart(): "},
		{"NCCLGroupEnd", NCCLGroupEnd, "ncclGroupEnd(): "},
	} {
		err := tc.call()
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s before LoadNCCL = %v; want ErrUnavailable", tc.name, err)
			continue
		}
		if dynamicLoading && !strings.HasPrefix(err.Error(), tc.cgo) {
			t.Errorf("%s before LoadNCCL = %q; want it to start with %q", tc.name, err, tc.cgo)
		}
	}
}

// TestNCCLBadArguments checks what is refused before NCCL is called, so
// it needs no NCCL.
func TestNCCLBadArguments(t *testing.T) {
	if !dynamicLoading {
		t.Skip("the stub refuses everything")
	}
	var c NCCLComm
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"AllReduce", c.AllReduce(0, 0, -1, NCCLFloat32, NCCLSum, 0), "ncclAllReduce: negative count -1"},
		{"ReduceScatter", c.ReduceScatter(0, 0, -2, NCCLFloat32, NCCLSum, 0), "ncclReduceScatter: negative count -2"},
		{"AllGather", c.AllGather(0, 0, -3, NCCLUint8, 0), "ncclAllGather: negative count -3"},
		{"Broadcast", c.Broadcast(0, 0, -4, NCCLUint8, 0, 0), "ncclBroadcast: negative count -4"},
		{"Broadcast root", c.Broadcast(0, 0, 4, NCCLUint8, -1, 0), "ncclBroadcast: root -1"},
		{"NCCLCommInitRank rank", func() error { _, err := NCCLCommInitRank(2, [NCCLUniqueIDBytes]byte{}, 2); return err }(),
			"ncclCommInitRank: rank 2 of a world of 2"},
		{"NCCLCommInitRank world", func() error { _, err := NCCLCommInitRank(0, [NCCLUniqueIDBytes]byte{}, 0); return err }(),
			"ncclCommInitRank: rank 0 of a world of 0"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) || errors.Is(tc.err, ErrUnavailable) {
			t.Errorf("%s = %v; want an error containing %q", tc.name, tc.err, tc.want)
		}
	}
}
