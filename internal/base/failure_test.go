package base

import (
	"errors"
	"testing"
)

func TestFailureRoundTrip(t *testing.T) {
	for _, f := range []Failure{
		{FailureLost, 0, "aborted: the user gave up"},
		{FailureTimeout, 7, "timed out waiting for peers: AllReduce #3"},
		{FailureMismatch, 2, ""},
	} {
		got, ok := DecodeFailure(f.Encode())
		if !ok || got != f {
			t.Errorf("DecodeFailure(%q) = %+v, %v; want %+v", f.Encode(), got, ok, f)
		}
	}
	for _, bad := range []string{"", "connection closed without goodbye", failurePrefix + "9 1 x", failurePrefix + "1 -1 x", failurePrefix + "1 x"} {
		if _, ok := DecodeFailure(bad); ok {
			t.Errorf("DecodeFailure(%q) accepted", bad)
		}
	}
}

func TestFailureOfNamesTheCulprit(t *testing.T) {
	cases := []struct {
		err     error
		kind    FailureKind
		culprit int
		is      error
	}{
		{&TimeoutError{Op: OpAllReduce, Missing: []int{3, 5}}, FailureTimeout, 3, ErrTimeout},
		{&MismatchError{}, FailureMismatch, 1, ErrMismatch},
		{&RankError{Rank: 4, Err: ErrPeerLost}, FailureLost, 4, ErrPeerLost},
		{&RankError{Rank: 6, Err: ErrTimeout}, FailureTimeout, 6, ErrTimeout},
		{errors.New("boom"), FailureLost, 1, ErrPeerLost},
	}
	for _, c := range cases {
		f := FailureOf(c.err, 1)
		if f.Kind != c.kind || f.Culprit != c.culprit {
			t.Errorf("FailureOf(%v) = %+v; want kind %d culprit %d", c.err, f, c.kind, c.culprit)
		}
		var re *RankError
		if err := f.Err(); !errors.Is(err, c.is) || !errors.As(err, &re) || re.Rank != c.culprit {
			t.Errorf("Failure%+v.Err() = %v; want a *RankError naming %d matching %v", f, err, c.culprit, c.is)
		}
	}
}
