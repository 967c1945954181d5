package report

// Bandwidths as nccl-tests reports them (its doc/PERFORMANCE.md), so that
// detcoll's numbers read beside NCCL's. The algorithm bandwidth is S / t,
// S the size of the operation as nccl-tests counts it; the bus bandwidth
// multiplies it by a factor of the operation and the world size n that
// makes it comparable with the hardware's peak whatever n:
//
//	operation                              S                   factor
//	all_reduce                             the input           2(n-1)/n
//	reduce_scatter, reduce_scatter_many    the input (n x out) (n-1)/n
//	all_gather, all_gather_many            the output (n x in) (n-1)/n
//	broadcast                              the input           1
//
// The *_many forms count both buffers together. Other operations (a
// barrier moves no data) have no bandwidth.

// BusFactor is the bus-bandwidth factor of op on world ranks, and whether
// op has one. On one rank it is 0 but for broadcast.
func BusFactor(op string, world int) (float64, bool) {
	n := float64(world)
	switch op {
	case "all_reduce":
		return float64(2*(world-1)) / n, true
	case "reduce_scatter", "reduce_scatter_many", "all_gather", "all_gather_many":
		return float64(world-1) / n, true
	case "broadcast":
		return 1, true
	}
	return 0, false
}

// Bandwidth is the algorithm and bus bandwidth in GB/s (1e9 bytes a
// second) of op at inputBytesPerRank on world ranks taking us
// microseconds a call: with S as above, alg = S / (us x 1e3) and bus =
// alg x BusFactor, in float64 in that order. Both are 0 for an operation
// without a bus factor, a time that is not positive, or a bandwidth that
// would not be finite.
func Bandwidth(op string, inputBytesPerRank int64, world int, us float64) (alg, bus float64) {
	factor, ok := BusFactor(op, world)
	if !ok || !(us > 0) {
		return 0, 0
	}
	s := float64(inputBytesPerRank)
	if op == "all_gather" || op == "all_gather_many" {
		s *= float64(world)
	}
	alg = s / (us * 1e3)
	bus = alg * factor
	if !finite(alg) || !finite(bus) {
		return 0, 0
	}
	return alg, bus
}

func finite(x float64) bool { return x-x == 0 }
