package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// testConfig is a small sweep across the cpu backend's thresholds.
func testConfig() Config {
	return Config{N: 2, Backend: "cpu", Timeout: 20 * time.Second, Seed: 1, Sizes: []int{4, 1 << 10, 65600},
		DTypes: []detcoll.DType{detcoll.TypeBFloat16, detcoll.TypeFloat16, detcoll.TypeFloat32, detcoll.TypeFloat64}}
}

// testRows is the number of rows of testConfig: 5 reductions and 8 with
// operators (AllReduce and ReduceScatter with avg, premulsum, max and min)
// for each element type, and 4 gathers, at each size.
const testRows = (13*4 + 4) * 3

var roles = map[string]ranktest.Role{
	"verify": func() error { return Run(context.Background(), testConfig(), os.Stdout, os.Stderr) },
	// verify-corrupt: rank 1's memory flips a bit of its first
	// all-reduce's result.
	"verify-corrupt": func() error {
		cfg := testConfig()
		if os.Getenv("RANK") == "1" {
			cfg.hostMemory = &check.Corrupt{}
		}
		return Run(context.Background(), cfg, os.Stdout, os.Stderr)
	},
}

func TestMain(m *testing.M) {
	ranktest.Main(roles)
	os.Exit(m.Run())
}

// TestRun: two ranks pass every check, and rank 0 prints the table.
func TestRun(t *testing.T) {
	res := ranktest.Run(t, 2, "verify", time.Minute)
	ranktest.RequireOK(t, res)
	out := res[0].Output
	for _, want := range []string{"detcoll verify: 2 ranks, cpu backend\n", "operation ", "AllReduce/inplace ",
		"ReduceScatterMany ", "AllReduce/max ", "ReduceScatter/premulsum ", "AllGatherMany ", "Broadcast ", fmt.Sprintf("%d of %d checks passed on every rank\n", testRows, testRows)} {
		if !strings.Contains(out, want) {
			t.Errorf("rank 0's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " NO ") || strings.Contains(res[1].Output, "operation") {
		t.Errorf("a row failed, or rank 1 printed the table:\nrank 0:\n%s\nrank 1:\n%s", out, res[1].Output)
	}
}

// TestRunCanFail: a result wrong on one rank fails its row on every rank,
// and every rank's run.
func TestRunCanFail(t *testing.T) {
	res := ranktest.Run(t, 2, "verify-corrupt", time.Minute)
	for _, r := range res {
		if !r.Failed() || !strings.Contains(r.Output, "1 checks failed") {
			t.Errorf("rank %d exited %d; want a failure of 1 check:\n%s", r.Rank, r.ExitCode, r.Output)
		}
	}
	if !strings.Contains(res[0].Output, "  NO  ") || !strings.Contains(res[0].Output, "failed on rank 1") {
		t.Errorf("rank 0's table shows no row failed on rank 1:\n%s", res[0].Output)
	}
}

// TestTableStreams: a row is on stdout as soon as it is added, before the
// next one runs.
func TestTableStreams(t *testing.T) {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var out bytes.Buffer
	tab := newTable(c, &out)
	tab.header("cpu")
	for i, r := range []Row{{Op: "AllReduce", DType: detcoll.TypeFloat32, Bytes: 4}, {Op: "Broadcast", DType: detcoll.TypeUint8, Bytes: 5, Err: fmt.Errorf("bad")}} {
		if err := tab.add(r); err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(out.String(), "\n"); lines != 3+i {
			t.Fatalf("after row %d: %d lines; want %d:\n%s", i, lines, 3+i, out.String())
		}
	}
	tab.summary()
	if !strings.HasSuffix(out.String(), "1 of 2 checks passed on every rank\n") || tab.err() == nil {
		t.Errorf("summary %q, err %v; want 1 of 2 and an error", out.String(), tab.err())
	}
}

// TestOps checks every operation's fields and what the device-only rows
// expect.
func TestOps(t *testing.T) {
	for _, op := range append(append(append(append([]operation(nil), reduceOps...), gatherOps...), windowOp), crossOps()...) {
		if op.call == nil || op.want == nil || op.outLen == nil || op.inScale == nil {
			t.Errorf("%s: incomplete operation", op.name)
		}
	}
	if got := windowOp.outLen(2, 10, 2); got != 8 {
		t.Errorf("window of 5 two-byte elements: %d output bytes; want 8", got)
	}
	if got := windowOp.outLen(2, 0, 2); got != 0 {
		t.Errorf("window of nothing: %d output bytes; want 0", got)
	}
}

func TestNestable(t *testing.T) {
	for w, want := range map[int]bool{0: false, 1: true, 2: true, 3: false, 4: true, 6: false, 8: true, 16: false} {
		if got := nestable(w); got != want {
			t.Errorf("nestable(%d) = %v; want %v", w, got, want)
		}
	}
}
