package gputest

import (
	"errors"
	"fmt"
	"testing"
)

// recorder is a T that records how it was ended.
type recorder struct{ skipped, failed string }

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestNeed(t *testing.T) {
	cases := []struct {
		env        string
		n, have    int
		err        error
		skip, fail bool
	}{
		{"", 1, 1, nil, false, false},
		{"", 2, 1, nil, true, false},
		{"", 1, 0, errors.New("no driver"), true, false},
		{"1", 1, 1, nil, false, false},
		{"1", 2, 1, nil, false, true},
		{"1", 1, 0, errors.New("no driver"), false, true},
		{"0", 2, 1, nil, true, false},
	}
	for _, c := range cases {
		t.Setenv(Env, c.env)
		var r recorder
		Need(&r, c.n, c.have, c.err)
		if (r.skipped != "") != c.skip || (r.failed != "") != c.fail {
			t.Errorf("%s=%q, need %d, have %d, err %v: skipped %q, failed %q; want skip %v, fail %v",
				Env, c.env, c.n, c.have, c.err, r.skipped, r.failed, c.skip, c.fail)
		}
	}
}
