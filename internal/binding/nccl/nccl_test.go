package nccl

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/num"
)

func TestResultError(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{Success, "ncclSuccess (0)"},
		{UnhandledCudaError, "ncclUnhandledCudaError (1)"},
		{InvalidArgument, "ncclInvalidArgument (4)"},
		{RemoteError, "ncclRemoteError (6)"},
		{InProgress, "ncclInProgress (7)"},
		{Result(42), "ncclResult(42) (42)"},
	} {
		if got := tc.r.Error(); got != tc.want {
			t.Errorf("Result(%d).Error() = %q; want %q", int(tc.r), got, tc.want)
		}
	}
	for r, name := range resultNames {
		if !strings.HasPrefix(name, "nccl") || r.Name() != name {
			t.Errorf("resultNames[%d] = %q; want an nccl name equal to Name()", int(r), name)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	const text = "invalid argument (run with NCCL_DEBUG=WARN for details)"
	args := []any{driver.DevicePtr(0x1000), driver.DevicePtr(0x2000), 16, Float32, Sum, uintptr(0)}
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
		err := error(newError(InvalidArgument, tc.text, tc.detail, "ncclAllReduce", args...))
		if got := err.Error(); got != tc.want {
			t.Errorf("%s: Error() = %q; want %q", tc.name, got, tc.want)
		}
		var ne *Error
		var r Result
		if !errors.As(err, &ne) || !errors.As(err, &r) || r != InvalidArgument {
			t.Errorf("%s: errors.As found %v, %v; want the *Error and ncclInvalidArgument", tc.name, ne, r)
		}
		if errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: an NCCL failure matches ErrUnavailable", tc.name)
		}
	}
}

func TestDataTypeOf(t *testing.T) {
	mapped := map[DataType]bool{}
	for dt := num.Invalid; dt <= num.Uint64Type+1; dt++ {
		nt, ok := DataTypeOf(dt)
		wantOK := dt.Valid() && dt != num.Int16Type && dt != num.Uint16Type
		if ok != wantOK {
			t.Errorf("DataTypeOf(%v) ok = %v; want %v", dt, ok, wantOK)
			continue
		}
		if !ok {
			continue
		}
		// NCCL's names follow detcoll's, so equal names mean the same type.
		if nt.String() != dt.String() {
			t.Errorf("DataTypeOf(%v) = %v", dt, nt)
		}
		if mapped[nt] {
			t.Errorf("DataTypeOf(%v) = %v, which another type maps to", dt, nt)
		}
		mapped[nt] = true
	}
	if len(mapped) != len(dataTypeNames) {
		t.Errorf("%d NCCL types mapped; want all %d", len(mapped), len(dataTypeNames))
	}
	// The ABI values (nccl.h).
	for nt, want := range map[DataType]int{Int8: 0, Uint8: 1, Int32: 2, Uint32: 3, Int64: 4,
		Uint64: 5, Float16: 6, Float32: 7, Float64: 8, Bfloat16: 9} {
		if int(nt) != want {
			t.Errorf("%v = %d; want %d", nt, int(nt), want)
		}
	}
	if got := DataType(12).String(); got != "ncclDataType(12)" {
		t.Errorf("DataType(12).String() = %q", got)
	}
	for op, want := range map[RedOp]string{Sum: "sum", Prod: "prod", Max: "max", Min: "min",
		Avg: "avg", RedOp(9): "ncclRedOp(9)"} {
		if got := op.String(); got != want {
			t.Errorf("RedOp(%d).String() = %q; want %q", int(op), got, want)
		}
	}
}

// skipIfLoaded skips tests of the unloaded state: once loaded, NCCL
// stays loaded for the life of the test binary.
func skipIfLoaded(t *testing.T) {
	t.Helper()
	if name := Library(); name != "" {
		t.Skipf("NCCL (%s) already loaded by an earlier test", name)
	}
}

func TestLoadMissingLibrary(t *testing.T) {
	skipIfLoaded(t)
	missing := filepath.Join(t.TempDir(), "libnccl.so.2")
	t.Setenv(EnvLib, missing)
	err := Load()
	if err == nil {
		t.Fatalf("Load with %s=%s succeeded; want an error", EnvLib, missing)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Load() = %v; want an error matching ErrUnavailable", err)
	}
	if dynamicLoading && (!strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "from "+EnvLib)) {
		t.Errorf("Load() = %q; want the message to name %s and %s", err, missing, EnvLib)
	}
	t.Logf("Load() = %v", err)
	if name := Library(); name != "" {
		t.Errorf("Library() = %q after a failed Load; want empty", name)
	}
}

// TestDriverIgnoresNCCL checks that a missing NCCL leaves the driver alone:
// driver.Load fails or succeeds as it would anyway, never because of NCCL.
func TestDriverIgnoresNCCL(t *testing.T) {
	t.Setenv(EnvLib, filepath.Join(t.TempDir(), "libnccl.so.2"))
	err := driver.Load()
	if err == nil {
		if err := driver.Unload(); err != nil {
			t.Error(err)
		}
		return
	}
	if strings.Contains(strings.ToLower(err.Error()), "nccl") {
		t.Errorf("driver.Load() = %v; it must not depend on NCCL", err)
	}
}

func TestLoadNotNCCL(t *testing.T) {
	if !dynamicLoading {
		t.Skip("this build cannot dlopen")
	}
	skipIfLoaded(t)
	t.Setenv(EnvLib, "libc.so.6") // on every Linux system, with no NCCL symbol
	err := Load()
	if err == nil {
		t.Fatal("Load with libc as NCCL succeeded; want an error")
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "dlsym ncclGetVersion in libc.so.6") {
		t.Errorf("Load() = %q; want ErrUnavailable naming the missing symbol", err)
	}
	if _, err := Version(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Version after a failed Load = %v; want ErrUnavailable", err)
	}
}

func TestCallsBeforeLoad(t *testing.T) {
	skipIfLoaded(t)
	var c Comm
	for _, tc := range []struct {
		name string
		call func() error
		cgo  string // the message start in the cgo build
	}{
		{"Version", func() error { _, err := Version(); return err }, "ncclGetVersion(): "},
		{"GetUniqueID", func() error { _, err := GetUniqueID(); return err }, "ncclGetUniqueId(): "},
		{"CommInitRank", func() error { _, err := CommInitRank(2, UniqueID{}, 1); return err },
			"ncclCommInitRank(2, 1): "},
		{"AllReduce", func() error { return c.AllReduce(0x100, 0x200, 3, Float32, Sum, 0) },
			"ncclAllReduce(0x100, 0x200, 3, float32, sum, 0): "},
		{"ReduceScatter", func() error { return c.ReduceScatter(0x100, 0x200, 3, Bfloat16, Max, 0) },
			"ncclReduceScatter(0x100, 0x200, 3, bfloat16, max, 0): "},
		{"AllGather", func() error { return c.AllGather(0x100, 0x200, 3, Uint8, 0) },
			"ncclAllGather(0x100, 0x200, 3, uint8, 0): "},
		{"Broadcast", func() error { return c.Broadcast(0x100, 0x100, 3, Int64, 1, 0) },
			"ncclBroadcast(0x100, 0x100, 3, int64, 1, 0): "},
		{"Destroy", c.Destroy, "ncclCommDestroy(0): "},
		{"Abort", c.Abort, "ncclCommAbort(0): "},
		{"GroupStart", GroupStart, "ncclGroupStart(): "},
		{"GroupEnd", GroupEnd, "ncclGroupEnd(): "},
	} {
		err := tc.call()
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s before Load = %v; want ErrUnavailable", tc.name, err)
			continue
		}
		if dynamicLoading && !strings.HasPrefix(err.Error(), tc.cgo) {
			t.Errorf("%s before Load = %q; want it to start with %q", tc.name, err, tc.cgo)
		}
	}
}

// TestBadArguments checks what is refused before NCCL is called, so
// it needs no NCCL.
func TestBadArguments(t *testing.T) {
	if !dynamicLoading {
		t.Skip("the stub refuses everything")
	}
	var c Comm
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"AllReduce", c.AllReduce(0, 0, -1, Float32, Sum, 0), "ncclAllReduce: negative count -1"},
		{"ReduceScatter", c.ReduceScatter(0, 0, -2, Float32, Sum, 0), "ncclReduceScatter: negative count -2"},
		{"AllGather", c.AllGather(0, 0, -3, Uint8, 0), "ncclAllGather: negative count -3"},
		{"Broadcast", c.Broadcast(0, 0, -4, Uint8, 0, 0), "ncclBroadcast: negative count -4"},
		{"Broadcast root", c.Broadcast(0, 0, 4, Uint8, -1, 0), "ncclBroadcast: root -1"},
		{"CommInitRank rank", func() error { _, err := CommInitRank(2, UniqueID{}, 2); return err }(),
			"ncclCommInitRank: rank 2 of a world of 2"},
		{"CommInitRank world", func() error { _, err := CommInitRank(0, UniqueID{}, 0); return err }(),
			"ncclCommInitRank: rank 0 of a world of 0"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) || errors.Is(tc.err, ErrUnavailable) {
			t.Errorf("%s = %v; want an error containing %q", tc.name, tc.err, tc.want)
		}
	}
}
