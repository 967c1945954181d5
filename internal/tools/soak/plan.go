package soak

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/core/num"
)

// Op is one kind of soak call.
type Op uint8

// The operations a soak draws from, with equal odds.
const (
	OpAllReduce         Op = iota // out of place
	OpAllReduceInPlace            // out is in
	OpAllReduceStaged             // the input written into the staging view
	OpReduceScatter               // out of place
	OpReduceScatterMany           // 1 to maxParts buffers
	OpAllGather                   // out of place
	OpAllGatherInPlace            // in is out's own slot
	OpAllGatherMany               // 1 to maxParts buffers
	OpBroadcast                   // a random root
	numOps
)

var opNames = [numOps]string{
	"all_reduce", "all_reduce/in_place", "all_reduce/staged", "reduce_scatter", "reduce_scatter_many",
	"all_gather", "all_gather/in_place", "all_gather_many", "broadcast",
}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return "op?"
}

// Reduces reports whether o sums (its inputs come from the float pools
// and its results from the reference tree).
func (o Op) Reduces() bool { return o <= OpReduceScatterMany }

func (o Op) scatters() bool { return o == OpReduceScatter || o == OpReduceScatterMany }
func (o Op) many() bool     { return o == OpReduceScatterMany || o == OpAllGatherMany }
func (o Op) inPlace() bool {
	return o == OpAllReduceInPlace || o == OpAllGatherInPlace || o == OpBroadcast
}

// Element types: the reductions' and the gathers' (every type: gathers
// copy bytes).
var (
	reduceTypes = []detcoll.DType{detcoll.TypeBFloat16, detcoll.TypeFloat16, detcoll.TypeFloat32, detcoll.TypeFloat64}
	gatherTypes = []detcoll.DType{detcoll.TypeUint8, detcoll.TypeInt8, detcoll.TypeInt16, detcoll.TypeUint16,
		detcoll.TypeInt32, detcoll.TypeUint32, detcoll.TypeInt64, detcoll.TypeUint64,
		detcoll.TypeBFloat16, detcoll.TypeFloat16, detcoll.TypeFloat32, detcoll.TypeFloat64}
)

const (
	maxParts = 4  // buffers of a *Many call
	maxOff   = 32 // output and input offsets, in elements, are below this
)

// Call is one planned call. Every field but Delay is the same on every
// rank: ranks agree on the sequence without communicating.
type Call struct {
	Number int64 // 1 for the first call
	Op     Op
	DType  detcoll.DType
	// Counts holds each buffer's element count: the all-reduce's, the
	// reduce-scatter's output (its input is W times as long), the
	// gather's input (its output W times as long), the broadcast's. One
	// buffer except for the *Many calls.
	Counts []int
	Root   int // of a broadcast
	// Red is a reduction's operator, drawn from every operator the
	// element type takes.
	Red num.RedOp
	// InOff and OutOff are the elements between the 64-byte aligned start
	// of the input and output buffers (after the guard bytes) and the
	// buffers: misaligned sub-slices.
	InOff, OutOff int
	Delay         time.Duration // this rank's host-side wait before the call
	seed          uint64        // of the input windows
}

// InBytes is this rank's input bytes (the sum over buffers).
func (c *Call) InBytes(world int) int {
	n := 0
	for _, k := range c.Counts {
		n += k
	}
	if c.Op.scatters() {
		n *= world
	}
	return n * c.DType.Size()
}

// planner draws calls. A call depends only on the seed, its number, the
// world size and the bounds (and, for Delay, the rank): plan(i) can be
// drawn by any rank at any time.
type planner struct {
	seed        uint64
	world, rank int
	maxBytes    int // input bytes per rank, at most
	maxDelay    time.Duration
	delayProb   float64
	ops         []Op        // those drawn from
	reds        []num.RedOp // a reduction's operators drawn from; none: Sum
}

func (p *planner) plan(number int64) Call {
	rng := rand.New(rand.NewPCG(p.seed, uint64(number)))
	c := Call{Number: number, Op: p.ops[rng.IntN(len(p.ops))]}
	if c.Op.Reduces() {
		c.DType = reduceTypes[rng.IntN(len(reduceTypes))]
		if len(p.reds) > 0 {
			c.Red = p.reds[rng.IntN(len(p.reds))]
		}
	} else {
		c.DType = gatherTypes[rng.IntN(len(gatherTypes))]
	}
	size := c.DType.Size()
	// Input bytes per rank, log-uniform in [one element, maxBytes].
	lo, hi := math.Log(float64(size)), math.Log(float64(p.maxBytes))
	n := max(int(math.Exp(lo+rng.Float64()*(hi-lo)))/size, 1)
	if c.Op.scatters() {
		n = max(n/p.world, 1)
	}
	parts := 1
	if c.Op.many() {
		parts = min(1+rng.IntN(maxParts), n)
	}
	c.Counts = split(rng, n, parts)
	c.Root = rng.IntN(p.world)
	c.InOff, c.OutOff = rng.IntN(maxOff), rng.IntN(maxOff)
	// Every rank draws every rank's delay, so the stream stays the same.
	for r := range p.world {
		var d time.Duration
		if rng.Float64() < p.delayProb && p.maxDelay > 0 {
			d = time.Duration(rng.Int64N(int64(p.maxDelay)))
		}
		if r == p.rank {
			c.Delay = d
		}
	}
	c.seed = rng.Uint64()
	return c
}

// split cuts n into parts positive counts at random points.
func split(rng *rand.Rand, n, parts int) []int {
	counts := make([]int, parts)
	left := n
	for i := range parts - 1 {
		// Leave at least one for each later part.
		k := 1 + rng.IntN(left-(parts-1-i))
		counts[i] = k
		left -= k
	}
	counts[parts-1] = left
	return counts
}

// window returns where part's input of rank starts in its pool, in
// elements of a pool of l elements: for the reductions the same on every
// rank (the reference of element i then is the pool sum at the same
// place), for the gathers rank's own.
func (c *Call) window(part, rank, l int) int {
	if c.Op.Reduces() {
		rank = -1
	}
	h := mix(c.seed ^ mix(uint64(part)<<32^uint64(rank+1)))
	return int(h % uint64(l))
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}
