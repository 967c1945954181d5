package proto

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/tree"
)

// TestHostSchedulesAreTheFlatTree runs every rank's schedule of a call
// across hosts together, in a lockstep simulator whose elements are
// expressions ("r3.1" is rank 3's element 1; an add is "(a+b)"), and
// checks each output against the flat tree over all W ranks written the
// same way: equal strings are the same operands in the same order, so the
// schedule gives the flat tree's bits whatever the arithmetic. A schedule
// whose ranks do not meet on the same collectives deadlocks the simulator
// and fails.
func TestHostSchedulesAreTheFlatTree(t *testing.T) {
	elems := []int{1, 3, 8, 13}
	if testing.Short() {
		elems = []int{3, 13}
	}
	for _, H := range []int{1, 2, 3, 4, 5, 8} {
		for _, G := range []int{1, 2, 4} {
			for _, halving := range []bool{false, true} {
				if halving && (H < 2 || H&(H-1) != 0) {
					continue
				}
				for _, local := range []bool{false, true} {
					for _, n := range elems {
						for _, size := range []int{1, 2, 4} {
							for _, op := range []base.Op{base.OpAllReduce, base.OpReduceScatter, base.OpAllGather, base.OpBroadcast} {
								roots := []int{0}
								if op == base.OpBroadcast {
									roots = []int{0, H*G - 1, H * G / 2}
								}
								for _, root := range roots {
									for _, inPlace := range []bool{false, true} {
										name := fmt.Sprintf("%v/%dx%d/halving=%v/local-always=%v/n=%d/size=%d/root=%d/in-place=%v", op, H, G, halving, local, n, size, root, inPlace)
										if err := simulateHosts(op, H, G, n, size, root, halving, local, inPlace); err != nil {
											t.Errorf("%s: %v", name, err)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

func plus(a, b string) string { return "(" + a + "+" + b + ")" }

// hostRank is one rank of the simulation: its schedule, where it is, its
// buffers of expressions.
type hostRank struct {
	steps []HostStep
	pc    int
	mem   [NumHostBufs][]string
}

func (r *hostRank) at(ref Ref) []string { return r.mem[ref.Buf][ref.Off : ref.Off+ref.N] }

// simulateHosts runs op with elems elements of size bytes (per rank:
// all-reduce's and broadcast's buffer, reduce-scatter's output,
// all-gather's input) over H hosts of G ranks and checks every output,
// byte by byte (a byte's expression names it: a schedule that mixed
// bytes and elements up would move the names). In place, the output is
// the input (all-reduce), or is the rank's share of it (reduce-scatter),
// or holds it in the rank's slot (all-gather), as NCCL allows.
func simulateHosts(op base.Op, H, G, elems, size, root int, halving, localAlways, inPlace bool) error {
	W, n := H*G, elems*size
	inLen, outLen := n, n
	switch op {
	case base.OpReduceScatter:
		inLen = W * n
	case base.OpAllGather:
		outLen = W * n
	}
	ranks := make([]*hostRank, W)
	for r := range ranks {
		call := HostCall{Op: op, Hosts: H, Host: r / G, PerHost: G, Local: r % G, Bytes: n, ElemSize: size,
			Root: root, Halving: halving, LocalAlways: localAlways}
		rk := &hostRank{steps: HostSchedule(nil, call)}
		sizes, _ := ScratchSizes(rk.steps)
		for b := range rk.mem {
			rk.mem[b] = make([]string, sizes[b])
			for i := range rk.mem[b] {
				rk.mem[b][i] = "garbage" // scratch is never read before it is written
			}
		}
		in, out := make([]string, inLen), make([]string, outLen)
		if inPlace {
			switch op {
			case base.OpAllReduce:
				out = in
			case base.OpReduceScatter:
				out = in[r*n : (r+1)*n]
			case base.OpAllGather:
				in = out[r*n : (r+1)*n]
			}
		}
		for i := range in {
			in[i] = fmt.Sprintf("r%d.%d", r, i)
		}
		if op == base.OpBroadcast {
			copy(out, in)
		}
		rk.mem[BufIn], rk.mem[BufOut] = in, out
		if sizes[BufIn] > inLen || sizes[BufOut] > outLen {
			return fmt.Errorf("rank %d: the steps reach past the caller's buffers (in %d of %d, out %d of %d)", r, sizes[BufIn], inLen, sizes[BufOut], outLen)
		}
		ranks[r] = rk
	}
	if err := runHostSim(ranks, H, G); err != nil {
		return err
	}
	for r, rk := range ranks {
		got := rk.mem[BufOut]
		for i := range got {
			var want string
			switch op {
			case base.OpAllReduce, base.OpReduceScatter:
				off := i
				if op == base.OpReduceScatter {
					off = r*n + i
				}
				leaves := make([]string, W)
				for q := range leaves {
					leaves[q] = fmt.Sprintf("r%d.%d", q, off)
				}
				want = tree.Eval(leaves, plus)
			case base.OpAllGather:
				want = fmt.Sprintf("r%d.%d", i/n, i%n)
			case base.OpBroadcast:
				want = fmt.Sprintf("r%d.%d", root, i)
			}
			if got[i] != want {
				return fmt.Errorf("rank %d: element %d is %s, want %s", r, i, got[i], want)
			}
		}
	}
	return nil
}

// runSim steps every rank: local steps at once, a collective once every
// rank it involves has reached the same collective.
func runHostSim(ranks []*hostRank, H, G int) error {
	for {
		progress, done := false, true
		for _, rk := range ranks {
			for rk.pc < len(rk.steps) && localStep(rk, rk.steps[rk.pc]) {
				rk.pc++
				progress = true
			}
			if rk.pc < len(rk.steps) {
				done = false
			}
		}
		if done {
			return nil
		}
		for r, rk := range ranks {
			if rk.pc < len(rk.steps) && collective(ranks, r, H, G) {
				progress = true
			}
		}
		if !progress {
			var b strings.Builder
			for r, rk := range ranks {
				if rk.pc < len(rk.steps) {
					fmt.Fprintf(&b, "; rank %d at %v", r, rk.steps[rk.pc])
				}
			}
			return fmt.Errorf("deadlock%s", b.String())
		}
	}
}

// localStep runs s if it involves no other rank.
func localStep(rk *hostRank, s HostStep) bool {
	switch s.Action {
	case HostCopy:
		copy(rk.at(s.Dst), slices.Clone(rk.at(s.Src)))
	case HostZero:
		for i := range rk.at(s.Dst) {
			rk.at(s.Dst)[i] = "0"
		}
	case Tree:
		srcs := make([][]string, len(s.Srcs))
		for k, ref := range s.Srcs {
			srcs[k] = slices.Clone(rk.at(ref))
		}
		dst := rk.at(s.Dst)
		for i := range dst {
			leaves := make([]string, len(srcs))
			for k := range srcs {
				leaves[k] = srcs[k][i]
			}
			dst[i] = tree.Eval(leaves, plus)
		}
	default:
		return false
	}
	return true
}

// collective runs rank r's pending step, a collective, if every rank it
// involves is at the same kind of step; it reports whether it ran.
func collective(ranks []*hostRank, r, H, G int) bool {
	s := ranks[r].steps[ranks[r].pc]
	host, g := r/G, r%G
	var group []int
	switch s.Action {
	case LocalReduceScatter, LocalAllGather, LocalBroadcast:
		for q := range G {
			group = append(group, host*G+q)
		}
	case RailGather:
		for h := range H {
			group = append(group, h*G+g)
		}
	case RailExchange:
		group = []int{r, s.Peer*G + g}
	}
	steps := make([]HostStep, len(group))
	for k, q := range group {
		rk := ranks[q]
		if rk.pc >= len(rk.steps) || rk.steps[rk.pc].Action != s.Action {
			return false
		}
		steps[k] = rk.steps[rk.pc]
	}
	switch s.Action {
	case LocalReduceScatter:
		srcs := make([][]string, G)
		for k, q := range group {
			srcs[k] = slices.Clone(ranks[q].at(steps[k].Src))
		}
		for k, q := range group {
			dst := ranks[q].at(steps[k].Dst)
			for i := range dst {
				leaves := make([]string, G)
				for j := range leaves {
					leaves[j] = srcs[j][k*len(dst)+i]
				}
				dst[i] = tree.Eval(leaves, plus)
			}
		}
	case LocalAllGather, RailGather:
		srcs := make([][]string, len(group))
		for k, q := range group {
			srcs[k] = slices.Clone(ranks[q].at(steps[k].Src))
		}
		for k, q := range group {
			dst := ranks[q].at(steps[k].Dst)
			for j, src := range srcs {
				copy(dst[j*len(src):], src)
			}
		}
	case LocalBroadcast:
		root := slices.Clone(ranks[group[s.Root]].at(steps[s.Root].Dst))
		for k, q := range group {
			copy(ranks[q].at(steps[k].Dst), root)
		}
	case RailExchange:
		if steps[1].Peer != host {
			return false
		}
		a, b := slices.Clone(ranks[group[0]].at(steps[0].Src)), slices.Clone(ranks[group[1]].at(steps[1].Src))
		if len(a) != steps[1].Dst.N || len(b) != steps[0].Dst.N {
			panic(fmt.Sprintf("exchange of %d and %d elements into %d and %d", len(a), len(b), steps[1].Dst.N, steps[0].Dst.N))
		}
		copy(ranks[group[1]].at(steps[1].Dst), a)
		copy(ranks[group[0]].at(steps[0].Dst), b)
	}
	for _, q := range group {
		ranks[q].pc++
	}
	return true
}
