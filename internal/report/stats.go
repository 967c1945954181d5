package report

import "slices"

// Median is the median of samples (the mean of the middle two for an even
// count), or 0 for none. samples is not changed.
func Median(samples []float64) float64 {
	n := len(samples)
	if n == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Slowest is the largest of the ranks' medians: the time at which the
// slowest rank typically finished. perRank[r] holds rank r's samples.
func Slowest(perRank [][]float64) float64 {
	var worst float64
	for _, s := range perRank {
		worst = max(worst, Median(s))
	}
	return worst
}
