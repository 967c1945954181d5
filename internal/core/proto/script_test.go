package proto

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/detcoll/detcoll/internal/core/base"
)

// TestScripts runs testdata/*.txt: the protocol's schedules, the verdicts
// of waits over scripted peer words and statuses (the races a multi-process
// test hits only by luck), and the codecs. Regenerate the expected output
// with -rewrite, then review the diff.
func TestScripts(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt") // testdata/sim is TestSim's
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range paths {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "schedule":
				return runSchedule(t, d)
			case "decide":
				return runDecide(t, d)
			case "status":
				return runStatus(t, d)
			case "prevails":
				return runPrevails(t, d)
			case "hosts":
				return runHosts(t, d)
			case "path":
				return runPath(t, d)
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	}
}

// schedule path=<path> [staged] [launches]
//
// With launches, the schedule as Launches cuts it, a line "launch N"
// before each.
func runSchedule(t *testing.T, d *datadriven.TestData) string {
	var name string
	d.ScanArgs(t, "path", &name)
	p, ok := ParsePath(name)
	if !ok {
		t.Fatalf("%s: unknown path %q", d.Pos, name)
	}
	steps := Schedule(p, d.HasArg("staged"))
	if steps == nil {
		return "none\n"
	}
	var b strings.Builder
	if d.HasArg("launches") {
		for i, l := range Launches(p, d.HasArg("staged")) {
			fmt.Fprintf(&b, "launch %d\n", i+1)
			for _, s := range l {
				fmt.Fprintf(&b, "  %v\n", s)
			}
		}
		return b.String()
	}
	for _, s := range steps {
		fmt.Fprintln(&b, s)
	}
	return b.String()
}

// decide self=<r> world=<w> target=<n> [op=<op>] [seq=<n>] [phase=<p>] [expired] [own=<failure>]
// then one line per peer: r<p> <word> [failed=<failure>]
// where <failure> is kind:culprit[:text], kind one of lost, timeout,
// mismatch, aborted, invalid.
func runDecide(t *testing.T, d *datadriven.TestData) string {
	w := Wait{Op: base.OpAllReduce, Phase: PhaseReady}
	d.ScanArgs(t, "self", &w.Self)
	d.ScanArgs(t, "world", &w.World)
	d.ScanArgs(t, "target", &w.Target)
	w.Seq = w.Target
	d.MaybeScanArgs(t, "seq", &w.Seq)
	var phase int
	if d.HasArg("phase") {
		d.ScanArgs(t, "phase", &phase)
		w.Phase = Phase(phase)
	}
	var own *base.Failure
	if d.HasArg("own") {
		var s string
		d.ScanArgs(t, "own", &s)
		f := parseFailure(t, s)
		own = &f
	}
	v := scripted{words: make([]uint64, w.World), failed: make([]*base.Failure, w.World)}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || !strings.HasPrefix(fields[0], "r") {
			t.Fatalf("%s: bad peer line %q", d.Pos, line)
		}
		p, err1 := strconv.Atoi(fields[0][1:])
		word, err2 := strconv.ParseUint(fields[1], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || p >= w.World {
			t.Fatalf("%s: bad peer line %q", d.Pos, line)
		}
		v.words[p] = word
		for _, f := range fields[2:] {
			if s, ok := strings.CutPrefix(f, "failed="); ok {
				fl := parseFailure(t, s)
				v.failed[p] = &fl
			}
		}
	}
	verdict := Decide(w, v, own, d.HasArg("expired"))
	if verdict.Outcome == Arrived || verdict.Outcome == Pending {
		return verdict.Outcome.String() + "\n"
	}
	f := verdict.Failure
	return fmt.Sprintf("%v culprit=%d\n%T: %v\n", verdict.Outcome, f.Culprit, f.Err(), f.Err())
}

// status <failure> | status word=<hex>
func runStatus(t *testing.T, d *datadriven.TestData) string {
	if d.HasArg("word") {
		var s string
		d.ScanArgs(t, "word", &s)
		w, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("%s: %v", d.Pos, err)
		}
		f, ok := StatusFailure(w)
		if !ok {
			return "healthy or unknown\n"
		}
		return fmt.Sprintf("kind=%d culprit=%d\n", f.Kind, f.Culprit)
	}
	f := parseFailure(t, d.CmdArgs[0].Key)
	w := StatusWord(f)
	back, ok := StatusFailure(w)
	return fmt.Sprintf("%#016x\nround trip: kind=%d culprit=%d ok=%v\n", w, back.Kind, back.Culprit, ok)
}

// prevails recorded=<failure> found=<failure>
func runPrevails(t *testing.T, d *datadriven.TestData) string {
	var rec, found string
	d.ScanArgs(t, "recorded", &rec)
	d.ScanArgs(t, "found", &found)
	return fmt.Sprintln(Prevails(parseFailure(t, rec), parseFailure(t, found)))
}

var kinds = map[string]base.FailureKind{
	"lost": base.FailureLost, "timeout": base.FailureTimeout, "mismatch": base.FailureMismatch,
	"aborted": base.FailureAborted, "invalid": base.FailureInvalid,
}

// parseFailure reads kind:culprit[:text].
func parseFailure(t *testing.T, s string) base.Failure {
	parts := strings.SplitN(s, ":", 3)
	kind, ok := kinds[parts[0]]
	if !ok || len(parts) < 2 {
		t.Fatalf("bad failure %q: want kind:culprit[:text]", s)
	}
	culprit, err := strconv.Atoi(parts[1])
	if err != nil {
		t.Fatalf("bad failure %q: %v", s, err)
	}
	f := base.Failure{Kind: kind, Culprit: culprit}
	if len(parts) == 3 {
		f.Text = strings.ReplaceAll(parts[2], "_", " ")
	}
	if kind == base.FailureTimeout {
		f.Missing, f.Op, f.Phase = []int{culprit}, base.OpAllReduce, PhaseReady.String()
	}
	return f
}

type scripted struct {
	words  []uint64
	failed []*base.Failure
}

func (s scripted) Word(p int) uint64 { return s.words[p] }

func (s scripted) Failure(p int) (base.Failure, bool) {
	if s.failed[p] == nil {
		return base.Failure{}, false
	}
	return *s.failed[p], true
}

// hosts op=<Op> hosts=<H> host=<h> per-host=<G> local=<g> bytes=<n> size=<s> [root=<r>] [halving] [local-always]
// prints the steps of one rank's call across hosts, then the scratch each
// buffer needs.
func runHosts(t *testing.T, d *datadriven.TestData) string {
	var call HostCall
	var op string
	d.ScanArgs(t, "op", &op)
	call.Op = parseOp(t, op)
	d.ScanArgs(t, "hosts", &call.Hosts)
	d.ScanArgs(t, "host", &call.Host)
	d.ScanArgs(t, "per-host", &call.PerHost)
	d.ScanArgs(t, "local", &call.Local)
	d.ScanArgs(t, "bytes", &call.Bytes)
	d.ScanArgs(t, "size", &call.ElemSize)
	d.MaybeScanArgs(t, "root", &call.Root)
	call.Halving, call.LocalAlways = d.HasArg("halving"), d.HasArg("local-always")
	steps := HostSchedule(nil, call)
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintln(&b, s)
	}
	sizes, used := ScratchSizes(steps)
	fmt.Fprint(&b, "scratch:")
	for buf := BufPad; buf < NumHostBufs; buf++ {
		if used[buf] {
			fmt.Fprintf(&b, " %v=%d", buf, sizes[buf])
		}
	}
	fmt.Fprintln(&b)
	return b.String()
}

// path engine=<shared-memory|gpu> [one-shot-max=<n>] [stream-min=<n>] [ll-max=<n>] [ll-buffers=<n>]
// then one call per line: <Op> world=<w> [buffers=<b>] [in=<n>] [out=<n>] [total=<n>]
// prints each call with the path ChoosePath gives it.
func runPath(t *testing.T, d *datadriven.TestData) string {
	var engine string
	d.ScanArgs(t, "engine", &engine)
	e := map[string]Engine{"shared-memory": SharedMemory, "gpu": GPUKernels}[engine]
	if e == 0 {
		t.Fatalf("%s: unknown engine %q", d.Pos, engine)
	}
	var th Thresholds
	d.MaybeScanArgs(t, "one-shot-max", &th.OneShotMax)
	d.MaybeScanArgs(t, "stream-min", &th.StreamMin)
	d.MaybeScanArgs(t, "ll-max", &th.LLMax)
	d.MaybeScanArgs(t, "ll-buffers", &th.LLBuffers)
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		fields := strings.Fields(line)
		f := PathFacts{Op: parseOp(t, fields[0]), Buffers: 1}
		for _, kv := range fields[1:] {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %q: %v", d.Pos, kv, err)
			}
			switch k {
			case "world":
				f.World = n
			case "buffers":
				f.Buffers = n
			case "in":
				f.In = n
			case "out":
				f.Out = n
			case "total":
				f.Total = n
			case "registered":
				f.Registered = n != 0
			default:
				t.Fatalf("%s: unknown fact %q", d.Pos, k)
			}
		}
		fmt.Fprintf(&b, "%s: %v\n", line, ChoosePath(e, f, th))
	}
	return b.String()
}

// parseOp is base.Op's String inverse.
func parseOp(t *testing.T, name string) base.Op {
	for o := base.OpInvalid + 1; o.String() != fmt.Sprintf("op(%d)", uint32(o)); o++ {
		if o.String() == name {
			return o
		}
	}
	t.Fatalf("unknown op %q", name)
	return 0
}
