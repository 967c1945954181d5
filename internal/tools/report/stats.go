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

// Percentile is the p-th percentile of samples, 0 <= p <= 100, by linear
// interpolation between the closest ranks (the default of numpy and R):
// with s sorted and h = (len(s)-1) x p / 100, it is s[h] for a whole h,
// else s[i] + (h-i) x (s[i+1]-s[i]) with i the whole part of h. It is 0
// for no samples; samples is not changed. Percentile(s, 50) equals
// Median(s) up to rounding; Median, not it, gives the rows' times.
func Percentile(samples []float64, p float64) float64 {
	n := len(samples)
	if n == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	h := float64(n-1) * p / 100
	i := int(h)
	if i >= n-1 {
		return s[n-1]
	}
	if i < 0 {
		return s[0]
	}
	// Within [s[i], s[i+1]] whatever the rounding: so a lower p never
	// gives more.
	return min(s[i]+(h-float64(i))*(s[i+1]-s[i]), s[i+1])
}

// SlowestPercentile is the largest of the ranks' p-th percentiles, as
// Slowest is of their medians: with p 10 and 90, a spread around Slowest
// that contains it.
func SlowestPercentile(perRank [][]float64, p float64) float64 {
	var worst float64
	for _, s := range perRank {
		worst = max(worst, Percentile(s, p))
	}
	return worst
}

// Summarise sets row's summary fields from its samples, on world ranks:
// the medians (Slowest), the 10th and 90th percentiles
// (SlowestPercentile) and the bus bandwidths (Bandwidth, from the
// medians). A side without samples gets zeros.
func (row *Row) Summarise(world int) {
	row.DetcollUS = Slowest(row.DetcollSamplesUS)
	row.DetcollP10US = SlowestPercentile(row.DetcollSamplesUS, 10)
	row.DetcollP90US = SlowestPercentile(row.DetcollSamplesUS, 90)
	_, row.DetcollBusBW = Bandwidth(row.Operation, row.InputBytesPerRank, world, row.DetcollUS)
	row.ReferenceUS = Slowest(row.ReferenceSamplesUS)
	row.ReferenceP10US = SlowestPercentile(row.ReferenceSamplesUS, 10)
	row.ReferenceP90US = SlowestPercentile(row.ReferenceSamplesUS, 90)
	_, row.ReferenceBusBW = Bandwidth(row.Operation, row.InputBytesPerRank, world, row.ReferenceUS)
}
