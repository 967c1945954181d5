package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseSizes reads a comma-separated list of byte counts, each a number
// with an optional binary unit: 4096, 64KiB, 1MiB, 2GiB (K, M and G alone
// mean the same).
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := parseSize(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func parseSize(s string) (int, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"G", 30}, {"M", 20}, {"K", 10}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = rest, u.shift
			break
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || n > (1<<40)>>shift {
		return 0, fmt.Errorf("size %q: want a positive byte count such as 4096, 64KiB or 1MiB", s)
	}
	return n << shift, nil
}
