package cpu

import "testing"

func TestCountCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"0", 1}, {"0-1", 2}, {"0-3,8,10-11", 7}, {"0-127", 128},
		{"", 0}, {"x", 0}, {"3-1", 0}, {"0-", 0}, {"-1", 0},
	} {
		if got := countCPUList(c.in); got != c.want {
			t.Errorf("countCPUList(%q) = %d; want %d", c.in, got, c.want)
		}
	}
	if hostCPUs() < 1 {
		t.Errorf("hostCPUs() = %d", hostCPUs())
	}
}
