package proto

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/detcoll/detcoll/internal/core/base"
)

// The simulator: W ranks that each run their calls' schedules step by step
// over scripted memory, the way internal/backend/cpu runs them over shared memory
// (its run and wait), with Decide at every wait. The scripts in
// testdata/sim interleave the ranks, kill them, expire their deadlines and
// deliver the rendezvous's notices in the orders that a multi-process test
// reaches only by luck, and check what every rank then reports.
//
//	job world=W                         a new job
//	call ranks=0,1 path=P [staged] [count=N] [op=O] [registered]   each rank starts its next call
//	run [ranks=0,2] [steps=N]           advance the ranks round-robin until each waits or ends
//	kill rank=R                         R stops for good (its words stay as they are)
//	tell ranks=0,1 failure=F            the rendezvous reports F (kind:culprit[:text]) to them
//	abort rank=R                        R's Abort: recorded and published at once
//	expire ranks=0                      their deadline passes
//	words                               every rank's words and status
//	outcome                             how each rank's last call ended

type simRank struct {
	words  [numWords]uint64
	sig    base.Signature
	status *base.Failure // published: what peers read
	own    *base.Failure // this rank's recorded cause (Err)
	dead   bool
	last   uint64 // the sequence number of its last call

	steps   []Step
	at      int
	seq     uint64
	expired bool
	result  string // "" while running
}

type simJob struct{ ranks []*simRank }

// view is a rank's proto.View of its peers' word w.
type view struct {
	j *simJob
	w Word
}

func (v view) Word(p int) uint64 { return v.j.ranks[p].words[v.w] }

func (v view) Failure(p int) (base.Failure, bool) {
	if f := v.j.ranks[p].status; f != nil {
		return *f, true
	}
	return base.Failure{}, false
}

// fail records f as rank r's cause, as a backend's fail does: the first
// cause stands unless f prevails; r's peers see it in its status word.
func (j *simJob) fail(r int, f base.Failure) {
	k := j.ranks[r]
	if k.own == nil || Prevails(*k.own, f) {
		k.own = &f
	}
	k.status = k.own
	k.result = "failed: " + fmt.Sprint(k.own.Err())
}

// step runs rank r's next step; it returns false when the rank cannot go
// on now (waiting, ended, dead).
func (j *simJob) step(r int, out *strings.Builder) bool {
	k := j.ranks[r]
	if k.dead || k.result != "" || k.at >= len(k.steps) {
		return false
	}
	s := k.steps[k.at]
	switch s.Action {
	case Await:
		w := Wait{Self: r, World: len(j.ranks), Target: s.Target(k.seq), Op: k.sig.Op, Seq: k.seq, Phase: s.Phase}
		v := Decide(w, view{j, s.Word}, k.own, k.expired)
		switch v.Outcome {
		case Pending:
			return false
		case Failed, TimedOut:
			// (cpu's run also looks for a mismatch itself when a wait on
			// Stage failed but every stage is in by then: words that
			// arrived between Decide's reads. Here a rank reads all its
			// peers' words at one instant, so that cannot happen.)
			j.fail(r, v.Failure)
			fmt.Fprintf(out, "r%d %s: %v\n", r, at(s, k.seq), v.Outcome)
			return false
		}
	case Publish:
		k.words[s.Word] = s.Target(k.seq)
	case Sign:
		k.sig.Seq = k.seq
	case CheckSignatures:
		if m, ok := j.mismatch(r); ok {
			j.fail(r, m)
			fmt.Fprintf(out, "r%d %s: mismatch\n", r, at(s, k.seq))
			return false
		}
	}
	fmt.Fprintf(out, "r%d %s\n", r, at(s, k.seq))
	k.at++
	if k.at == len(k.steps) {
		k.result = "ok"
		k.last = k.seq
	}
	return true
}

// mismatch compares every rank's signature with r's, as CheckSignatures.
// at is s as it runs in call seq: with its target's number.
func at(s Step, seq uint64) string {
	switch s.Action {
	case Publish:
		return fmt.Sprintf("publish %v=%d", s.Word, s.Target(seq))
	case Await:
		return fmt.Sprintf("await %v>=%d", s.Word, s.Target(seq))
	}
	return s.Action.String()
}

func (j *simJob) mismatch(r int) (base.Failure, bool) {
	sigs := make([]base.Signature, len(j.ranks))
	differ := false
	for p, k := range j.ranks {
		sigs[p] = k.sig
		if k.sig != j.ranks[r].sig {
			differ = true
		}
	}
	if !differ {
		return base.Failure{}, false
	}
	return base.Failure{Kind: base.FailureMismatch, Culprit: -1, Signatures: sigs}, true
}

func TestSim(t *testing.T) {
	datadriven.Walk(t, "testdata/sim", func(t *testing.T, path string) {
		var j *simJob
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "job" && j == nil {
				t.Fatalf("%s: %s before job", d.Pos, d.Cmd)
			}
			var out strings.Builder
			switch d.Cmd {
			case "job":
				var world int
				d.ScanArgs(t, "world", &world)
				j = &simJob{}
				for range world {
					j.ranks = append(j.ranks, &simRank{})
				}
				return ""
			case "call":
				var name string
				d.ScanArgs(t, "path", &name)
				p, ok := ParsePath(name)
				if !ok {
					t.Fatalf("%s: unknown path %q", d.Pos, name)
				}
				count := uint64(8)
				d.MaybeScanArgs(t, "count", &count)
				op := base.OpAllReduce
				if p == Closing {
					op = base.OpClose
				}
				if d.HasArg("op") {
					var name string
					d.ScanArgs(t, "op", &name)
					op = parseOp(t, name)
				}
				for _, r := range ranksArg(t, d, j) {
					k := j.ranks[r]
					k.seq = k.last + 1
					if k.result == "" && k.steps != nil && k.at < len(k.steps) {
						t.Fatalf("%s: rank %d is still in its call", d.Pos, r)
					}
					k.steps, k.at, k.result, k.expired = Schedule(p, d.HasArg("staged")), 0, "", false
					k.sig = base.Signature{Op: op, DType: 3, Count: count, Buffers: 1, Registered: d.HasArg("registered")}
					if k.own != nil { // a poisoned communicator runs nothing
						k.result = "failed: " + fmt.Sprint(k.own.Err())
					}
				}
				return ""
			case "run":
				rs := ranksArg(t, d, j)
				limit := -1
				d.MaybeScanArgs(t, "steps", &limit)
				for moved := true; moved && limit != 0; {
					moved = false
					for _, r := range rs {
						if limit != 0 && j.step(r, &out) {
							moved = true
							limit--
						}
					}
				}
				return out.String()
			case "kill":
				var r int
				d.ScanArgs(t, "rank", &r)
				j.ranks[r].dead = true
				return ""
			case "tell":
				var s string
				d.ScanArgs(t, "failure", &s)
				f := parseFailure(t, s)
				for _, r := range ranksArg(t, d, j) {
					if k := j.ranks[r]; k.own == nil {
						k.own = &f // the rendezvous's report: recorded, not published
					}
				}
				return ""
			case "abort":
				var r int
				d.ScanArgs(t, "rank", &r)
				j.fail(r, base.Failure{Kind: base.FailureAborted, Culprit: r, Text: "the user gave up"})
				return ""
			case "expire":
				for _, r := range ranksArg(t, d, j) {
					j.ranks[r].expired = true
				}
				return ""
			case "words":
				for r, k := range j.ranks {
					fmt.Fprintf(&out, "r%d stage=%d reduced=%d done=%d", r, k.words[Stage], k.words[Reduced], k.words[Done])
					if k.status != nil {
						fmt.Fprintf(&out, " status=%#x", StatusWord(*k.status))
					}
					if k.dead {
						out.WriteString(" dead")
					}
					out.WriteByte('\n')
				}
				return out.String()
			case "outcome":
				for r, k := range j.ranks {
					res := k.result
					switch {
					case k.dead:
						res = "dead"
					case res == "":
						res = "waiting at " + at(k.steps[k.at], k.seq)
					}
					fmt.Fprintf(&out, "r%d %s\n", r, res)
				}
				return out.String()
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// ranksArg reads ranks=0,2 (default: every rank).
func ranksArg(t *testing.T, d *datadriven.TestData, j *simJob) []int {
	if !d.HasArg("ranks") {
		all := make([]int, len(j.ranks))
		for r := range all {
			all[r] = r
		}
		return all
	}
	var rs []int
	for _, arg := range d.CmdArgs {
		if arg.Key != "ranks" {
			continue
		}
		for _, v := range strings.Split(strings.Join(arg.Vals, ","), ",") {
			r, err := strconv.Atoi(v)
			if err != nil || r < 0 || r >= len(j.ranks) {
				t.Fatalf("%s: bad rank %q", d.Pos, v)
			}
			rs = append(rs, r)
		}
	}
	slices.Sort(rs)
	return rs
}
