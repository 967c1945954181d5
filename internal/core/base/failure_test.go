package base

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

var sentinels = []error{ErrClosed, ErrInvalid, ErrMismatch, ErrPeerLost, ErrTimeout, ErrAborted, ErrUnavailable}

// matching returns the sentinels err matches.
func matching(err error) []error {
	var m []error
	for _, s := range sentinels {
		if errors.Is(err, s) {
			m = append(m, s)
		}
	}
	return m
}

func TestFailureRoundTrip(t *testing.T) {
	sigs := []Signature{{Op: OpAllReduce, Count: 3, Buffers: 1, Seq: 9}, {Op: OpAllGather, Count: 3, Buffers: 1, Seq: 9}}
	for _, f := range []Failure{
		{Kind: FailureLost, Culprit: 0, Text: "connection closed without goodbye"},
		{Kind: FailureAborted, Culprit: 3, Text: "the user gave up"},
		{Kind: FailureTimeout, Culprit: 7, Op: OpAllReduce, Seq: 3, Phase: "waiting", Missing: []int{7, 8}, After: time.Second},
		{Kind: FailureMismatch, Culprit: -1, Signatures: sigs},
		{Kind: FailureInvalid, Culprit: 1, Text: "capacities differ\nsecond line"},
	} {
		got, ok := DecodeFailure(f.Encode())
		if !ok || !reflect.DeepEqual(got, f) {
			t.Errorf("DecodeFailure(%q) = %+v, %v; want %+v", f.Encode(), got, ok, f)
		}
	}
	for _, bad := range []string{"", "connection closed without goodbye", failurePrefix + `{"k":9,"c":1}` + "\nx",
		failurePrefix + `{"k":1,"c":-2}` + "\nx", failurePrefix + `{"k":1,"c":1}`, failurePrefix + "{\nx"} {
		if _, ok := DecodeFailure(bad); ok {
			t.Errorf("DecodeFailure(%q) accepted", bad)
		}
	}
}

// TestFailureEncodeFits: a long text is cut, the signatures dropped if they
// do not fit, and what remains still decodes.
func TestFailureEncodeFits(t *testing.T) {
	sigs := make([]Signature, 64)
	f := Failure{Kind: FailureMismatch, Culprit: -1, Signatures: sigs, Text: strings.Repeat("x", 5000)}
	s := f.Encode()
	if len(s) > 1024 {
		t.Fatalf("Encode() wrote %d bytes", len(s))
	}
	got, ok := DecodeFailure(s)
	if !ok || got.Kind != FailureMismatch || got.Signatures != nil || !strings.HasPrefix(f.Text, got.Text) {
		t.Errorf("DecodeFailure(Encode()) = %+v, %v", got, ok)
	}
}

// TestOneStory: whatever error a rank found, FailureOf, a trip through the
// wire and Err give its peers an error of the same type and text, matching
// exactly one sentinel, the culprit named once.
func TestOneStory(t *testing.T) {
	cause := errors.New("the user gave up")
	for _, c := range []struct {
		found   error
		is      error
		culprit int
	}{
		{&TimeoutError{Op: OpAllReduce, Seq: 4, Phase: "waiting", Missing: []int{3, 5}, After: time.Second}, ErrTimeout, 3},
		{&MismatchError{Signatures: []Signature{{Op: OpAllReduce}, {Op: OpBarrier}}}, ErrMismatch, -1},
		{&RankError{Rank: 4, Err: ErrPeerLost, Reason: "connection reset"}, ErrPeerLost, 4},
		{Aborted(1, cause), ErrAborted, 1},
		{&RankError{Rank: 2, Err: ErrInvalid, Reason: "capacities differ"}, ErrInvalid, 2},
		{errors.New("mmap: no space left on device"), ErrPeerLost, 1},
	} {
		mine := Canonical(c.found, 1)
		f, ok := DecodeFailure(FailureOf(mine, 1).Encode())
		if !ok {
			t.Fatalf("%v: does not round-trip", c.found)
		}
		theirs := f.Err()
		if reflect.TypeOf(mine) != reflect.TypeOf(theirs) || mine.Error() != theirs.Error() {
			t.Errorf("found %v: this rank says %T %q, its peers %T %q", c.found, mine, mine, theirs, theirs)
		}
		for _, err := range []error{mine, theirs} {
			if m := matching(err); len(m) != 1 || m[0] != c.is {
				t.Errorf("%q matches %v; want %v alone", err, m, c.is)
			}
			if n := strings.Count(err.Error(), "detcoll:"); n != 1 {
				t.Errorf("%q has %d prefixes; want 1", err, n)
			}
			if c.culprit >= 0 && strings.Count(err.Error(), fmt.Sprint("rank ", c.culprit))+strings.Count(err.Error(), fmt.Sprint("ranks [", c.culprit)) != 1 {
				t.Errorf("%q does not name rank %d once", err, c.culprit)
			}
		}
		if f.Culprit != c.culprit {
			t.Errorf("%v: culprit %d; want %d", c.found, f.Culprit, c.culprit)
		}
	}
	if err := Canonical(Aborted(1, cause), 1); !errors.Is(err, cause) {
		t.Errorf("the aborting rank's error %v does not wrap its cause", err)
	}
	if err := Canonical(&TimeoutError{}, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a timeout %v does not match context.DeadlineExceeded", err)
	}
}

// TestReportedTwiceNestsNothing: a failure that goes around (a rank tells
// it, a peer rebuilds it, tells it again) keeps one prefix.
func TestReportedTwiceNestsNothing(t *testing.T) {
	err := error(&RankError{Rank: 2, Err: ErrPeerLost, Reason: "killed"})
	for range 3 {
		f, _ := DecodeFailure(FailureOf(Canonical(err, 0), 0).Encode())
		err = f.Err()
	}
	if want := "detcoll: peer lost: rank 2: killed"; err.Error() != want {
		t.Errorf("after three trips: %q; want %q", err, want)
	}
}
