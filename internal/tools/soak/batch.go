package soak

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/testkit/check"
)

// guardByte fills every byte of the arenas that no call may write.
const guardByte = 0xA5

// region is a buffer of a batch: data bytes at off in its arena, with
// check.GuardLen guard bytes and the call's offset before it and
// check.GuardLen after it.
type region struct {
	start, off, n int // start of the guard before it, start of the data, data bytes
}

func (r region) end() int { return r.off + r.n + check.GuardLen }

// placed is a call laid out in a batch's arenas. Its buffers (the parts
// of a *Many call) lie back to back in one region.
type placed struct {
	Call
	world           int
	in, out         region // in.n == 0: no input region (in place, broadcast)
	inPart, outPart []int  // byte offset of each part in its region
}

// inBuf and outBuf return part's bytes of the input and output region.
func (p *placed) inBuf(arena []byte, part int) []byte {
	return arena[p.in.off+p.inPart[part] : p.in.off+p.inPart[part]+p.inLen(part)]
}

func (p *placed) outBuf(arena []byte, part int) []byte {
	return arena[p.out.off+p.outPart[part] : p.out.off+p.outPart[part]+p.outLen(part)]
}

// world is set by the batch: the lengths depend on it.
func (p *placed) inLen(part int) int {
	n := p.Counts[part] * p.DType.Size()
	if p.Op.scatters() {
		n *= p.world
	}
	return n
}

func (p *placed) outLen(part int) int {
	n := p.Counts[part] * p.DType.Size()
	if p.Op == OpAllGather || p.Op == OpAllGatherInPlace || p.Op == OpAllGatherMany {
		n *= p.world
	}
	return n
}

// batch is calls laid out in two host arenas, input and output, every
// byte outside the data guardByte. The executors run on these arenas
// (cpu) or on device copies of them (cuda).
type batch struct {
	world, rank int
	calls       []*placed
	in, out     []byte
	inLen       int // used bytes of in and out
	outLen      int
}

// reset empties b, keeping its arenas.
func (b *batch) reset() {
	b.calls = b.calls[:0]
	b.inLen, b.outLen = 0, 0
}

// add lays out c after the calls already in b.
func (b *batch) add(c Call) *placed {
	p := &placed{Call: c}
	p.world = b.world
	size := c.DType.Size()
	lay := func(cursor *int, n, off int) region {
		start := (*cursor + 63) &^ 63
		r := region{start: start, off: start + check.GuardLen + off*size, n: n}
		*cursor = r.end()
		return r
	}
	var in, out int
	for k := range c.Counts {
		p.inPart = append(p.inPart, in)
		p.outPart = append(p.outPart, out)
		in += p.inLen(k)
		out += p.outLen(k)
	}
	if !c.Op.inPlace() {
		p.in = lay(&b.inLen, in, c.InOff)
	}
	p.out = lay(&b.outLen, out, c.OutOff)
	b.calls = append(b.calls, p)
	return p
}

// fill sizes the arenas, sets every byte to guardByte and writes the
// inputs (and the in-place calls' outputs, which start as inputs).
func (b *batch) fill(pl *pools) {
	b.in = grow(b.in, b.inLen)
	b.out = grow(b.out, b.outLen)
	for _, p := range b.calls {
		size := p.DType.Size()
		switch p.Op {
		case OpAllReduceInPlace:
			pl.input(&p.Call, 0, b.rank).fill(p.outBuf(b.out, 0))
		case OpAllGatherInPlace:
			n := p.Counts[0] * size
			pl.input(&p.Call, 0, b.rank).fill(p.outBuf(b.out, 0)[b.rank*n : (b.rank+1)*n])
		case OpBroadcast:
			if b.rank == p.Root {
				pl.input(&p.Call, 0, b.rank).fill(p.outBuf(b.out, 0))
			}
		default:
			for k := range p.Counts {
				pl.input(&p.Call, k, b.rank).fill(p.inBuf(b.in, k))
			}
		}
	}
}

// grow returns a of n bytes, all guardByte.
func grow(a []byte, n int) []byte {
	if cap(a) < n {
		a = make([]byte, n, n+n/4)
	}
	a = a[:n]
	if n > 0 {
		// Doubling copies run at memmove's speed; a byte loop does not.
		a[0] = guardByte
		for i := 1; i < n; i *= 2 {
			copy(a[i:], a[:i])
		}
	}
	return a
}

// Failure is one call whose result was wrong, on one rank.
type Failure struct {
	Rank   int    `json:"rank"`
	Call   int64  `json:"call"`
	Op     string `json:"op"`
	DType  string `json:"dtype"`
	Counts []int  `json:"counts"`
	InOff  int    `json:"in_offset"`
	OutOff int    `json:"out_offset"`
	Root   int    `json:"root"`
	What   string `json:"what"` // the first wrong byte: where, got, want
}

// check compares every call's outputs with the reference, its inputs
// with what was written, and every guard byte. It returns the checks
// made and, for each call with a wrong byte, a Failure.
func (b *batch) check(pl *pools) (checks int64, failed []Failure) {
	for _, p := range b.calls {
		what := ""
		note := func(s string) {
			if what == "" {
				what = s
			}
		}
		size := p.DType.Size()
		for k := range p.Counts {
			got := p.outBuf(b.out, k)
			at := 0
			for _, s := range pl.want(&p.Call, k, b.rank) {
				if i := s.diff(got[at : at+s.n]); i >= 0 {
					e := (at + i) / size
					note(fmt.Sprintf("output %d, element %d of %d: got %#x, want %#x", k, e, len(got)/size,
						check.GetBits(got[e*size:], size), wantBits(s, e*size-at, size)))
				}
				at += s.n
			}
			checks++
			if p.in.n == 0 {
				continue
			}
			if i := pl.input(&p.Call, k, b.rank).diff(p.inBuf(b.in, k)); i >= 0 {
				note(fmt.Sprintf("input %d changed at byte %d", k, i))
			}
			checks++
		}
		if what != "" {
			failed = append(failed, p.failure(b.rank, what))
		}
	}
	// Guards: every byte outside the data regions.
	for _, a := range []struct {
		name  string
		arena []byte
		r     func(*placed) region
	}{{"output", b.out, func(p *placed) region { return p.out }}, {"input", b.in, func(p *placed) region { return p.in }}} {
		// Each gap between buffers is the guard after the one before it
		// (check.GuardLen bytes), then the guard before the next one.
		from := 0
		var prev *placed
		gap := func(to int, next *placed) {
			i := guardDiff(a.arena[from:to])
			if i < 0 {
				return
			}
			at := from + i
			if prev != nil && at < from+check.GuardLen {
				failed = append(failed, prev.failure(b.rank, fmt.Sprintf("%s guard: byte %d after the buffer changed to %#x",
					a.name, at-from, a.arena[at])))
			} else if next != nil {
				failed = append(failed, next.failure(b.rank, fmt.Sprintf("%s guard: byte %d before the buffer changed to %#x",
					a.name, a.r(next).off-at, a.arena[at])))
			} else if prev != nil {
				failed = append(failed, prev.failure(b.rank, fmt.Sprintf("%s guard: byte %d after the buffer changed to %#x",
					a.name, at-from, a.arena[at])))
			}
		}
		for _, p := range b.calls {
			r := a.r(p)
			if r.n == 0 {
				continue // no input region
			}
			gap(r.off, p)
			from, prev = r.off+r.n, p
		}
		gap(len(a.arena), nil)
		checks++
	}
	return checks, failed
}

func wantBits(s seg, at, size int) uint64 {
	e := make([]byte, size)
	seg{s.pool, s.start + at, size}.fill(e)
	return check.GetBits(e, size)
}

func guardDiff(b []byte) int {
	for i, v := range b {
		if v != guardByte {
			return i
		}
	}
	return -1
}

func (p *placed) failure(rank int, what string) Failure {
	return Failure{Rank: rank, Call: p.Number, Op: p.Op.String(), DType: p.DType.String(), Counts: p.Counts,
		InOff: p.InOff, OutOff: p.OutOff, Root: p.Root, What: what}
}
