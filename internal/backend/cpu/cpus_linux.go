package cpu

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// hostCPUs is the number of CPUs online on the host. The cpu backend asks
// whether its ranks outnumber the host's cores, not this process's share
// of them: launchers bind each rank to a core (mpirun, srun), which makes
// runtime.NumCPU 1 in every rank though the ranks are not oversubscribed.
func hostCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	if n := countCPUList(strings.TrimSpace(string(b))); n > 0 {
		return n
	}
	return runtime.NumCPU()
}

// countCPUList counts the CPUs of a kernel CPU list such as "0-3,8,10-11";
// it returns 0 for a malformed list.
func countCPUList(s string) int {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}
