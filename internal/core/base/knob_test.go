package base

import (
	"strings"
	"testing"
)

func TestTuningKnob(t *testing.T) {
	const name = "DETCOLL_TEST_KNOB"
	for _, tc := range []struct {
		value     string
		min, mult int
		want      int
		bad       bool
	}{
		{"", 0, 1, 7, false}, // unset: the default
		{"0", 0, 1, 0, false},
		{"4096", 64, 64, 4096, false},
		{"-1", 0, 1, 0, true},
		{"0", 1, 1, 0, true},
		{"100", 0, 64, 0, true},
		{"1k", 0, 1, 0, true},
	} {
		t.Setenv(name, tc.value)
		got, err := TuningKnob(name, 7, tc.min, tc.mult)
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%q: got %d, %v; want an error naming %s", tc.value, got, err, name)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %d, %v; want %d", tc.value, got, err, tc.want)
		}
	}
}
