package ncclshim

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// TestReport: with a report file set, every reduction is counted by
// operation, type, op, outcome and reason, served ones with their host
// time, and the record is written as JSON with the forwarded calls'
// counts; without one nothing is counted and nothing written. Operators
// made by ncclRedOpCreatePreMulSum are named premulsum, whatever NCCL's
// number for them; one the library did not see made keeps its number.
func TestReport(t *testing.T) {
	s := testSettings()
	s.Report = filepath.Join(t.TempDir(), "report.json")
	sh, _ := servedShim(t, 2, 0, s)
	for range 3 {
		sh.Do(sum(1, 0x1000, 0x1000, 4, 0), 0)
	}
	sh.Do(Call{Kind: AllReduce, Count: 4, DType: nccl.Int64, Op: nccl.Sum, Comm: 1}, 0)
	sh.Do(Call{Kind: ReduceScatter, Count: 4, DType: nccl.Float32, Op: nccl.Max, Comm: 1}, 0)
	sh.Do(Call{Kind: AllReduce, Count: 4, DType: nccl.Int32, Op: nccl.Prod, Comm: 1}, 0)
	sh.Do(Call{Kind: AllReduce, Count: 4, DType: nccl.Float32, Op: nccl.Prod, Comm: 1}, 0)
	for op := range nccl.RedOp(2) {
		sh.CreatePreMulSum(1, 5+op, nccl.Bfloat16, ScalarDevice, nil, 0x5000)
		sh.Do(Call{Kind: AllReduce, Count: 4, DType: nccl.Bfloat16, Op: 5 + op, Comm: 1}, 0)
	}
	sh.Do(Call{Kind: AllReduce, Count: 4, DType: nccl.Bfloat16, Op: 9, Comm: 1}, 0)
	if err := sh.WriteReport(map[string]int64{"ncclAllGather": 5}, 0); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.Report)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	got := map[string]int64{}
	for _, r := range rep.Calls {
		got[r.Operation+" "+r.DType+" "+r.Op+" "+r.Outcome] = r.Calls
		if (r.Outcome == "handed" || r.Outcome == "exact") && r.Reason == "" {
			t.Errorf("%s row without its reason: %+v", r.Outcome, r)
		}
	}
	want := map[string]int64{"AllReduce float32 sum served": 3, "AllReduce int64 sum served": 1, "ReduceScatter float32 max served": 1,
		"AllReduce int32 prod exact": 1, "AllReduce float32 prod handed": 1, "AllReduce bfloat16 premulsum served": 2,
		"AllReduce bfloat16 ncclRedOp(9) handed": 1}
	if len(got) != len(want) {
		t.Errorf("rows %v; want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d calls; want %d (rows %v)", k, got[k], n, got)
		}
	}
	if rep.Schema != 1 || rep.Forwarded["ncclAllGather"] != 5 || rep.Mode != "delegate" {
		t.Errorf("report %+v", rep)
	}

	// "%p" is the process id; a process that made no call writes nothing.
	s.Report = filepath.Join(t.TempDir(), "report-%p.json")
	each, _ := servedShim(t, 2, 0, s)
	each.Do(sum(1, 0x1000, 0x1000, 4, 0), 0)
	if err := each.WriteReport(nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(strings.ReplaceAll(s.Report, "%p", "1000")); err != nil {
		t.Errorf("no report with the process id in its name: %v", err)
	}
	idle, _ := servedShim(t, 2, 0, s)
	idle.getpid = func() int { return 77 }
	if err := idle.WriteReport(nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(strings.ReplaceAll(s.Report, "%p", "77")); err == nil {
		t.Error("a process that made no call wrote a report")
	}

	none, _ := servedShim(t, 2, 0, testSettings())
	none.Do(sum(1, 0x1000, 0x1000, 4, 0), 0)
	if none.rec != nil || none.WriteReport(nil, 0) != nil {
		t.Error("a shim without a report file records")
	}
}

// TestSettings: the variables, their defaults and their refusals.
func TestSettings(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	s, err := SettingsFromEnv(env())
	if err != nil || s.Mode != Delegate || s.Setup != SetupLazy || s.Capacity != 0 || s.Memory != DefaultMemory || s.Report != "" {
		t.Errorf("defaults: %+v, %v", s, err)
	}
	s, err = SettingsFromEnv(env(EnvMode, "strict", EnvSetup, "init", EnvCapacity, "8MiB", EnvMemory, "1GiB", EnvReport, "/tmp/r.json", EnvTimeout, "5s"))
	if err != nil || s.Mode != Strict || s.Setup != SetupAtInit || s.Capacity != 8<<20 || s.Memory != 1<<30 || s.Report != "/tmp/r.json" || s.Timeout.Seconds() != 5 {
		t.Errorf("set: %+v, %v", s, err)
	}
	for _, bad := range [][]string{{EnvMode, "lenient"}, {EnvSetup, "early"}, {EnvCapacity, "lots"}, {EnvCapacity, "512"},
		{EnvMemory, "16MiB"}, {EnvTimeout, "-1s"}} {
		if _, err := SettingsFromEnv(env(bad...)); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%s=%s: %v; want an error naming it", bad[0], bad[1], err)
		}
	}
}
