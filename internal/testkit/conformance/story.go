package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/settings"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// The error story (doc.go, "Failure"): for each way a job can fail, every
// rank that lives reports the same root cause with the same type, the
// culprit named once, matching exactly one public sentinel, and its Close
// says the same. Each rank prints what it saw as one JSON line; the
// parent compares the ranks. These cases call the host API.

// storyCase is one way to fail a job, with a rank to blame.
type storyCase struct {
	kind     string
	victim   int           // -1: the last rank
	killed   bool          // the victim dies and tells nothing
	is       error         // what every rank's error matches; nil: any, but the same
	typ      string        // its type
	alone    bool          // the victim's story differs (refused: it cannot be trusted)
	killAt   time.Duration // open-kill: how long into Open
	deadline time.Duration // Options.Timeout; 0: 2 s
}

var stories = []storyCase{
	// Killed 1 to 9 ms into Open: before it joined the store (the others
	// time out naming it), during the shared-memory exchange (they lose
	// it), or just after.
	{kind: "open-kill", victim: -1, killed: true, killAt: time.Millisecond},
	{kind: "open-kill", victim: -1, killed: true, killAt: 3 * time.Millisecond},
	{kind: "open-kill", victim: -1, killed: true, killAt: 5 * time.Millisecond},
	{kind: "open-kill", victim: -1, killed: true, killAt: 9 * time.Millisecond},
	{kind: "open-capacity", victim: 1, is: detcoll.ErrInvalid, typ: "*base.RankError"},
	{kind: "open-refused", victim: 1, is: detcoll.ErrTimeout, typ: "*base.TimeoutError", alone: true},
	{kind: "call-kill", victim: -1, killed: true, is: detcoll.ErrPeerLost, typ: "*base.RankError"},
	{kind: "call-kill", victim: 0, killed: true, is: detcoll.ErrPeerLost, typ: "*base.RankError"},
	{kind: "close-kill", victim: -1, killed: true, is: detcoll.ErrPeerLost, typ: "*base.RankError"},
	{kind: "timeout", victim: -1, is: detcoll.ErrTimeout, typ: "*base.TimeoutError", deadline: time.Second},
	{kind: "mismatch", victim: -1, is: detcoll.ErrMismatch, typ: "*base.MismatchError"},
	{kind: "abort", victim: -1, is: detcoll.ErrAborted, typ: "*base.RankError"},
}

func (sc storyCase) name() string {
	n := "OneErrorStory/" + sc.kind
	if sc.victim >= 0 {
		n += fmt.Sprintf("/victim=%d", sc.victim)
	}
	if sc.killAt > 0 {
		n += "/after=" + sc.killAt.String()
	}
	return n
}

// culprit returns the rank to blame at world ranks.
func (sc storyCase) culprit(world int) int {
	if sc.victim < 0 {
		return world - 1
	}
	return sc.victim
}

func storyCases() []Case {
	var cases []Case
	for _, sc := range stories {
		if sc.deadline == 0 {
			sc.deadline = 2 * time.Second
		}
		cases = append(cases, Case{Name: sc.name(), Worlds: []int{2, 4}, Limit: time.Minute, Capacity: 1 << 20,
			Timeout: sc.deadline, Parallel: true, Rank: sc.rank, Check: sc.check})
	}
	return cases
}

// story is what one rank saw.
type story struct {
	Rank      int
	Type      string   // the error's dynamic type
	Sentinels []string // the public sentinels it matches
	Culprit   []int    // RankError.Rank, TimeoutError.Missing; nil for a mismatch
	Op        string   // TimeoutError.Op
	Text      string   // Error(), with a timeout's "after ..." cut off
	Close     string   // the type and sentinels of Close's result, or "nil"
	Panicked  string   `json:",omitempty"`
}

var publicSentinels = []error{detcoll.ErrClosed, detcoll.ErrInvalid, detcoll.ErrMismatch, detcoll.ErrPeerLost,
	detcoll.ErrTimeout, detcoll.ErrAborted, detcoll.ErrUnavailable}

func sentinelsOf(err error) []string {
	var s []string
	for _, e := range publicSentinels {
		if errors.Is(err, e) {
			s = append(s, e.Error())
		}
	}
	return s
}

func storyOf(rank int, err error) story {
	s := story{Rank: rank, Type: fmt.Sprintf("%T", err), Sentinels: sentinelsOf(err), Text: fmt.Sprint(err)}
	var (
		re *detcoll.RankError
		te *detcoll.TimeoutError
	)
	switch {
	case errors.As(err, &te):
		s.Culprit, s.Op = te.Missing, te.Op.String()
		s.Text, _, _ = strings.Cut(s.Text, " after ")
	case errors.As(err, &re):
		s.Culprit = []int{re.Rank}
	}
	return s
}

func closeSummary(err error) string {
	if err == nil {
		return "nil"
	}
	return fmt.Sprintf("%T %v", err, sentinelsOf(err))
}

// rank fails the job the way sc says and prints what this rank saw.
func (sc storyCase) rank(r *Rank) error {
	ctx := context.Background()
	victim := sc.culprit(r.World)
	s := story{Rank: r.Rank}
	defer func() {
		if p := recover(); p != nil {
			s.Panicked = fmt.Sprint(p)
		}
		b, _ := json.Marshal(s)
		fmt.Printf("STORY %s\n", b)
	}()
	opts := r.Options()
	if r.Rank == victim {
		switch sc.kind {
		case "open-kill":
			time.AfterFunc(sc.killAt, func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) })
		case "open-capacity":
			opts.Capacity *= 2
		case "open-refused":
			os.Setenv(settings.Secret, strings.Repeat("ab", 32))
		}
	}
	c, err := detcoll.Open(ctx, opts)
	closed := "not opened"
	if err == nil {
		err = sc.fail(c, r.Rank, victim)
		if sc.kind == "close-kill" {
			closed = closeSummary(err) // fail's Close
		} else {
			closed = closeSummary(c.Close(ctx))
		}
	}
	if err == nil {
		return errors.New("the job did not fail")
	}
	s = storyOf(r.Rank, err)
	s.Close = closed
	return nil
}

// fail runs collectives until the job fails the way sc says and returns
// the error this rank got.
func (sc storyCase) fail(c *detcoll.Comm, rank, victim int) error {
	in, out := make([]float32, 1000), make([]float32, 1000)
	switch sc.kind {
	case "open-kill", "call-kill":
		for i := 0; ; i++ {
			if sc.kind == "call-kill" && rank == victim && i == 50 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			if err := detcoll.AllReduce(c, in[:1+i%1000], out[:1+i%1000]); err != nil {
				return err
			}
		}
	case "close-kill":
		if err := c.Barrier(); err != nil {
			return err
		}
		if rank == victim {
			time.Sleep(100 * time.Millisecond)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		return c.Close(context.Background())
	case "timeout":
		if rank == victim {
			time.Sleep(sc.deadline * 3 / 2)
			return c.Barrier()
		}
		return detcoll.AllReduce(c, in, out)
	case "mismatch":
		if rank == victim {
			return detcoll.AllGather(c, in[:10], make([]float32, 10*c.WorldSize()))
		}
		return detcoll.AllReduce(c, in[:10], out[:10])
	case "abort":
		if rank == victim {
			time.AfterFunc(100*time.Millisecond, func() { c.Abort(errors.New("the user gave up")) })
			time.Sleep(50 * time.Millisecond)
		}
		for {
			if err := detcoll.AllReduce(c, in, out); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("unknown story %q", sc.kind)
}

// check compares the stories of the ranks that lived.
func (sc storyCase) check(t *testing.T, world int, res []ranktest.Result) {
	victim := sc.culprit(world)
	stories := map[int]story{}
	for _, r := range res {
		if sc.killed && r.Rank == victim {
			if r.Signal != syscall.SIGKILL {
				t.Errorf("rank %d was to die by SIGKILL: %+v", r.Rank, r)
			}
			continue
		}
		if r.Failed() {
			t.Errorf("rank %d exited %d:\n%s", r.Rank, r.ExitCode, r.Output)
			continue
		}
		line := r.Output[strings.LastIndex(r.Output, "STORY ")+len("STORY "):]
		var s story
		if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &s); err != nil {
			t.Fatalf("rank %d printed no story: %v\n%s", r.Rank, err, r.Output)
		}
		if s.Panicked != "" {
			t.Errorf("rank %d panicked: %s", r.Rank, s.Panicked)
		}
		stories[r.Rank] = s
	}
	if t.Failed() {
		return
	}
	var first *story
	for r := range world {
		s, ok := stories[r]
		if !ok {
			continue
		}
		t.Logf("rank %d: %s; Close: %s", r, s.Text, s.Close)
		if len(s.Sentinels) != 1 {
			t.Errorf("rank %d: %q matches %d sentinels %v; want exactly one", r, s.Text, len(s.Sentinels), s.Sentinels)
		}
		if n := strings.Count(s.Text, "detcoll:"); n != 1 {
			t.Errorf("rank %d: %q has %d detcoll: prefixes; want 1", r, s.Text, n)
		}
		if s.Type != "*base.MismatchError" && !reflect.DeepEqual(s.Culprit, []int{victim}) {
			t.Errorf("rank %d: blames %v; want rank %d alone", r, s.Culprit, victim)
		}
		if sc.alone && r == victim {
			if len(s.Sentinels) != 1 || s.Sentinels[0] != detcoll.ErrInvalid.Error() {
				t.Errorf("refused rank %d: %q; want ErrInvalid", r, s.Text)
			}
			continue
		}
		if sc.is != nil && (len(s.Sentinels) == 0 || s.Sentinels[0] != sc.is.Error() || s.Type != sc.typ) {
			t.Errorf("rank %d: %s %q; want a %s matching %v", r, s.Type, s.Text, sc.typ, sc.is)
		}
		if first == nil {
			first = &s
			continue
		}
		// Same cause, same type, same words (a timeout's own wait time
		// aside), same Close.
		if s.Type != first.Type || s.Text != first.Text || s.Close != first.Close {
			t.Errorf("rank %d says %s %q, Close %s; rank %d says %s %q, Close %s",
				r, s.Type, s.Text, s.Close, first.Rank, first.Type, first.Text, first.Close)
		}
	}
	if first != nil && first.Close != "nil" && first.Close != "not opened" && !strings.HasPrefix(first.Close, first.Type) {
		t.Errorf("Close says %s; want the failure, %s", first.Close, first.Type)
	}
}
