package proto

import (
	"fmt"
	"strings"

	"github.com/detcoll/detcoll/internal/core/base"
)

// The schedule of a call across hosts: a communicator of W = H x G ranks,
// numbered host-major, made of the host's own communicator (G ranks, any
// backend) and rails between the hosts (the H ranks of one local rank).
// Its bits are the flat tree's because T over H x G leaves, G a power of
// two, is T over the H hosts' trees (internal/backend/hier's doc says why). Host
// memory and device memory take the same steps; package hier executes
// them over byte slices or over device addresses queued on a stream.

// HostBuf names a buffer of a call across hosts: the caller's two, and the
// scratch that the executor owns (grown and reused across calls).
type HostBuf uint8

const (
	BufIn     HostBuf = iota + 1 // the caller's input; a staged all-reduce's staging
	BufOut                       // the caller's output
	BufPad                       // the input padded to a multiple of G elements, or reordered (reduce-scatter) or gathered on the host (all-gather)
	BufPart                      // this rank's part of the host's reduce-scatter
	BufAll                       // what the rail gathered, or received from a peer
	BufSum                       // T over the hosts, before the host's all-gather
	BufPadOut                    // the padded output
	NumHostBufs
)

var hostBufNames = [NumHostBufs]string{BufIn: "in", BufOut: "out", BufPad: "pad", BufPart: "part", BufAll: "all",
	BufSum: "sum", BufPadOut: "pad-out"}

func (b HostBuf) String() string {
	if b == 0 || b >= NumHostBufs {
		return fmt.Sprintf("buf(%d)", uint8(b))
	}
	return hostBufNames[b]
}

// Ref is N bytes at offset Off of a buffer.
type Ref struct {
	Buf HostBuf
	Off int
	N   int
}

func (r Ref) String() string { return fmt.Sprintf("%v[%d:%d]", r.Buf, r.Off, r.Off+r.N) }

// HostAction is what one step across hosts does.
type HostAction uint8

const (
	// HostCopy: Dst = Src. A copy whose Src and Dst are the same memory
	// (the caller's in and out of an in-place call) does nothing.
	HostCopy HostAction = iota + 1
	// HostZero: Dst = 0 (the padding, which T's adds leave alone: x+0 is
	// x for every x, -0 included, since T adds the pads only to pads).
	HostZero
	// LocalReduceScatter: the host's communicator reduce-scatters Src
	// into Dst (Src.N = G x Dst.N) with the call's operator.
	LocalReduceScatter
	// LocalAllGather: the host's communicator gathers Src into Dst
	// (Dst.N = G x Src.N).
	LocalAllGather
	// LocalBroadcast: the host's communicator broadcasts Dst from its
	// local rank Root.
	LocalBroadcast
	// RailGather: the rail gathers Src from every host into Dst, in host
	// order (Dst.N = H x Src.N).
	RailGather
	// RailExchange: the rail sends Src to the rank of host Peer and
	// receives Dst from it, at once.
	RailExchange
	// Tree: Dst = T over Srcs, element by element, Srcs in tree order
	// (every Srcs[i].N = Dst.N).
	Tree
	numHostActions
)

var hostActionNames = [numHostActions]string{HostCopy: "copy", HostZero: "zero", LocalReduceScatter: "local-reduce-scatter",
	LocalAllGather: "local-all-gather", LocalBroadcast: "local-broadcast", RailGather: "rail-gather",
	RailExchange: "rail-exchange", Tree: "tree"}

func (a HostAction) String() string {
	if a == 0 || a >= numHostActions {
		return fmt.Sprintf("host-action(%d)", uint8(a))
	}
	return hostActionNames[a]
}

// HostStep is one step of a call across hosts.
type HostStep struct {
	Action HostAction
	Dst    Ref
	Src    Ref   // HostCopy, Local*, RailGather, RailExchange
	Srcs   []Ref // Tree
	Peer   int   // RailExchange: the host
	Root   int   // LocalBroadcast: the local rank
}

func (s HostStep) String() string {
	switch s.Action {
	case HostZero:
		return fmt.Sprintf("zero %v", s.Dst)
	case LocalBroadcast:
		return fmt.Sprintf("local-broadcast %v from local rank %d", s.Dst, s.Root)
	case RailExchange:
		return fmt.Sprintf("rail-exchange with host %d: send %v, receive %v", s.Peer, s.Src, s.Dst)
	case Tree:
		var b strings.Builder
		fmt.Fprintf(&b, "tree %v <-", s.Dst)
		for _, r := range s.Srcs {
			fmt.Fprintf(&b, " %v", r)
		}
		return b.String()
	}
	return fmt.Sprintf("%v %v <- %v", s.Action, s.Dst, s.Src)
}

// HostCall is what a call across hosts is, as one rank sees it.
type HostCall struct {
	Op             base.Op // a collective that moves data; Many ops take one schedule per buffer
	Hosts, Host    int     // H, and this rank's host
	PerHost, Local int     // G, a power of two, and this rank's local rank
	Bytes          int     // the buffer: all-reduce, broadcast; the output: reduce-scatter; the input: all-gather
	ElemSize       int
	Root           int // broadcast: the rank, of the W
	// Halving: the rail trades with one peer at a time (an Exchanger) and
	// H is a power of two above 1: all-reduce and reduce-scatter halve
	// along the rail, moving the bandwidth-optimal share, instead of
	// gathering every host's.
	Halving bool
	// LocalAlways: the host's reduce-scatter runs even with one rank per
	// host, where it is otherwise a copy and left out: it applies a
	// pre-multiplied sum's scalar.
	LocalAlways bool
}

// span is a range of elements.
type span struct{ lo, hi int }

// HostSchedule appends the steps of call to dst and returns it. The steps
// read the caller's input only before they write its output, so a call
// may be in place.
func HostSchedule(dst []HostStep, call HostCall) []HostStep {
	b := hostBuilder{HostCall: call, steps: dst}
	if call.Bytes == 0 {
		return dst // every rank's is empty (the signatures agreed): nothing to move
	}
	switch call.Op {
	case base.OpAllReduce, base.OpAllReduceStaged:
		b.allReduce()
	case base.OpReduceScatter, base.OpReduceScatterMany:
		b.reduceScatter()
	case base.OpAllGather, base.OpAllGatherMany:
		b.allGather()
	case base.OpBroadcast:
		b.broadcast()
	default:
		panic(fmt.Sprintf("proto: %v has no schedule across hosts", call.Op))
	}
	return b.steps
}

// ScratchSizes returns the bytes each buffer of steps spans (the caller's
// two included), so that an executor sizes its scratch once per call, and
// which buffers the steps name: an empty range still needs an address
// (the rail's receive of nothing, in a halving step of a short buffer).
func ScratchSizes(steps []HostStep) (n [NumHostBufs]int, used [NumHostBufs]bool) {
	see := func(r Ref) { n[r.Buf], used[r.Buf] = max(n[r.Buf], r.Off+r.N), true }
	for _, s := range steps {
		see(s.Dst)
		if s.Src.Buf != 0 {
			see(s.Src)
		}
		for _, r := range s.Srcs {
			see(r)
		}
	}
	return n, used
}

type hostBuilder struct {
	HostCall
	steps []HostStep
}

func (b *hostBuilder) add(s HostStep) { b.steps = append(b.steps, s) }

func (b *hostBuilder) copy(dst, src Ref) { b.add(HostStep{Action: HostCopy, Dst: dst, Src: src}) }

// local reports whether the host's reduce-scatter runs.
func (b *hostBuilder) local() bool { return b.PerHost > 1 || b.LocalAlways }

// allReduce: the host's reduce-scatter of the input padded to a multiple
// of G elements, T over the hosts of this rank's shard along the rail
// (halving, or a gather and T here), the host's all-gather. With one rank
// per host the host's steps are copies, and are left out.
func (b *hostBuilder) allReduce() {
	size, G := b.ElemSize, b.PerHost
	n := b.Bytes / size
	padded := (n + G - 1) / G * G * size
	shard := padded / G
	in, out := Ref{BufIn, 0, b.Bytes}, Ref{BufOut, 0, b.Bytes}
	pin, pout := in, out
	if padded != b.Bytes {
		pin, pout = Ref{BufPad, 0, padded}, Ref{BufPadOut, 0, padded}
		b.copy(Ref{BufPad, 0, b.Bytes}, in)
		b.add(HostStep{Action: HostZero, Dst: Ref{BufPad, b.Bytes, padded - b.Bytes}})
	}
	if b.Halving {
		work := pout // one rank per host: the output holds the work
		if b.local() {
			work = Ref{BufPart, 0, shard}
			b.add(HostStep{Action: LocalReduceScatter, Dst: work, Src: pin})
		} else {
			b.copy(pout, pin)
		}
		ranges, r := b.halve(work)
		b.double(work, ranges, r)
		switch {
		case G > 1:
			b.add(HostStep{Action: LocalAllGather, Dst: pout, Src: work})
		case work != pout:
			b.copy(pout, work) // the host's reduce-scatter of one rank ran for its scalar
		}
	} else {
		part := pin // already this rank's shard
		if b.local() {
			part = Ref{BufPart, 0, shard}
			b.add(HostStep{Action: LocalReduceScatter, Dst: part, Src: pin})
		}
		all := Ref{BufAll, 0, b.Hosts * shard}
		b.add(HostStep{Action: RailGather, Dst: all, Src: part})
		sum := pout
		if G > 1 {
			sum = Ref{BufSum, 0, shard}
		}
		b.add(HostStep{Action: Tree, Dst: sum, Srcs: b.hostParts(all, shard, 0, shard)})
		if G > 1 {
			b.add(HostStep{Action: LocalAllGather, Dst: pout, Src: sum})
		}
	}
	if padded != b.Bytes {
		b.copy(out, Ref{BufPadOut, 0, b.Bytes})
	}
}

// hostParts returns the H refs of n bytes at all + h*stride + off.
func (b *hostBuilder) hostParts(all Ref, stride, off, n int) []Ref {
	srcs := make([]Ref, b.Hosts)
	for h := range srcs {
		srcs[h] = Ref{all.Buf, all.Off + h*stride + off, n}
	}
	return srcs
}

// halve sums work along the rail by recursive halving: at distance d = 1,
// 2, 4, ... this rank keeps half of its range (the lower half when its
// host's bit d is 0), trades the other half with host host^d and adds, the
// lower hosts' block on the left. Those blocks are T's subtrees (T splits
// a power of two of leaves in halves), so after log2(H) steps this rank
// holds T over every host for the range it ends with: for 2^k hosts of
// equal blocks, block bitrev(host) of them. It returns the range before
// each step and the last.
func (b *hostBuilder) halve(work Ref) (ranges []span, r span) {
	size := b.ElemSize
	at := func(buf HostBuf, base int, s span) Ref { return Ref{buf, base + s.lo*size, (s.hi - s.lo) * size} }
	r = span{0, work.N / size}
	for d := 1; d < b.Hosts; d *= 2 {
		ranges = append(ranges, r)
		mid := r.lo + (r.hi-r.lo)/2
		lower := b.Host&d == 0
		keep, give := span{r.lo, mid}, span{mid, r.hi}
		if !lower {
			keep, give = give, keep
		}
		mine, theirs := at(work.Buf, work.Off, keep), at(BufAll, 0, keep)
		b.add(HostStep{Action: RailExchange, Peer: b.Host ^ d, Src: at(work.Buf, work.Off, give), Dst: theirs})
		left, right := mine, theirs
		if !lower {
			left, right = theirs, mine
		}
		b.add(HostStep{Action: Tree, Dst: mine, Srcs: []Ref{left, right}})
		r = keep
	}
	return ranges, r
}

// double is halving's way back: in reverse, each rank sends the range it
// holds to the host it traded with and receives that host's, until every
// rank holds T over the hosts for all of work.
func (b *hostBuilder) double(work Ref, ranges []span, r span) {
	size := b.ElemSize
	at := func(s span) Ref { return Ref{work.Buf, work.Off + s.lo*size, (s.hi - s.lo) * size} }
	for k := len(ranges) - 1; k >= 0; k-- {
		d := 1 << k
		whole := ranges[k]
		mid := whole.lo + (whole.hi-whole.lo)/2
		other := span{mid, whole.hi}
		if b.Host&d != 0 {
			other = span{whole.lo, mid}
		}
		b.add(HostStep{Action: RailExchange, Peer: b.Host ^ d, Src: at(r), Dst: at(other)})
		r = whole
	}
}

// Bitrev reverses the low log2(hosts) bits of x: where halving leaves host
// x's block among 2^k hosts' equal blocks. It is its own inverse.
func Bitrev(x, hosts int) int {
	y := 0
	for d := 1; d < hosts; d *= 2 {
		y <<= 1
		if x&d != 0 {
			y |= 1
		}
	}
	return y
}

// reduceScatter of W blocks of m bytes: the input reordered so that local
// rank g's share of the host's reduce-scatter is block h*G+g of every host
// h, in the order in which the rail leaves them (halving: host h's block
// at position bitrev(h)); the host's reduce-scatter; then along the rail
// either halving (each rank ends with its own block, (H-1)/H of its share
// moved) or a gather of every host's partial sums and T over the hosts of
// this rank's block.
func (b *hostBuilder) reduceScatter() {
	m, H, G := b.Bytes, b.Hosts, b.PerHost
	pos := func(h int) int { return h }
	if b.Halving {
		pos = func(h int) int { return Bitrev(h, H) }
	}
	in := Ref{BufIn, 0, H * G * m}
	part := in // one rank per host, gathering: the input is in host order
	if G > 1 || b.Halving {
		part = Ref{BufPad, 0, H * G * m}
		for g := range G {
			for h := range H {
				b.copy(Ref{BufPad, (g*H + pos(h)) * m, m}, Ref{BufIn, (h*G + g) * m, m})
			}
		}
	}
	if b.local() {
		src := part
		part = Ref{BufPart, 0, H * m}
		b.add(HostStep{Action: LocalReduceScatter, Dst: part, Src: src})
	}
	out := Ref{BufOut, 0, m}
	if b.Halving {
		_, r := b.halve(part)
		if want := pos(b.Host); r.lo*b.ElemSize != want*m || r.hi*b.ElemSize != (want+1)*m {
			panic(fmt.Sprintf("proto: halving ended at elements [%d, %d), not block %d", r.lo, r.hi, want))
		}
		b.copy(out, Ref{part.Buf, part.Off + r.lo*b.ElemSize, m})
		return
	}
	all := Ref{BufAll, 0, H * H * m}
	b.add(HostStep{Action: RailGather, Dst: all, Src: part})
	b.add(HostStep{Action: Tree, Dst: out, Srcs: b.hostParts(all, H*m, b.Host*m, m)})
}

// allGather: the host's all-gather, then the rail's, straight into the
// output: host-major numbering makes that the ranks' order.
func (b *hostBuilder) allGather() {
	in := Ref{BufIn, 0, b.Bytes}
	mine := in
	if b.PerHost > 1 {
		mine = Ref{BufPad, 0, b.PerHost * b.Bytes}
		b.add(HostStep{Action: LocalAllGather, Dst: mine, Src: in})
	}
	b.add(HostStep{Action: RailGather, Dst: Ref{BufOut, 0, b.Hosts * mine.N}, Src: mine})
}

// broadcast from the root: the root's rail gathers its buffer from every
// host and keeps the root host's, then every host broadcasts from that
// local rank. Each of the rail's ranks receives H-1 copies where one would
// do: simple, and fine for the small buffers broadcast carries.
func (b *hostBuilder) broadcast() {
	rootHost, rootLocal := b.Root/b.PerHost, b.Root%b.PerHost
	buf := Ref{BufOut, 0, b.Bytes}
	if b.Local == rootLocal && b.Hosts > 1 {
		b.add(HostStep{Action: RailGather, Dst: Ref{BufAll, 0, b.Hosts * b.Bytes}, Src: buf})
		if b.Host != rootHost {
			b.copy(buf, Ref{BufAll, rootHost * b.Bytes, b.Bytes})
		}
	}
	if b.PerHost > 1 {
		b.add(HostStep{Action: LocalBroadcast, Dst: buf, Root: rootLocal})
	}
}
