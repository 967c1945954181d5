package ncclshim

import (
	"fmt"
	"sync"

	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// Groups. NCCL runs the operations of one ncclGroupStart/End together, at
// ncclGroupEnd, so that a group's operations may depend on each other's
// progress: a receive larger than NCCL's buffers in the same group as an
// all-reduce, whose peer sends only after its own all-reduce, completes
// under NCCL. The shim therefore defers a served call made inside a group
// (Do's Deferred) to the group's end, and runs it there beside the
// group's other operations:
//
//   - before the real ncclGroupEnd (phase 0): a group of served calls only
//     runs them now, each on its stream (nothing to run beside). Otherwise
//     each call's communicator gets a stream of its own (c.side) that
//     forks from the call's stream, so that it follows what was queued
//     there before the group, and not the group's own operations, which
//     the real ncclGroupEnd queues next.
//   - after it (phase 1): the calls left run, on their side streams
//     (set up first if their communicator is pending: its setup's NCCL
//     calls could not be made inside the group), and each call's stream
//     joins its side stream, so that what the caller queues after the
//     group follows both, as it follows NCCL's group.
//
// Where a call's stream captures a CUDA graph, the fork brings the side
// stream into the capture and the join takes it out again.

// groups holds the deferred calls by group: an id the C boundary gives
// each outermost ncclGroupStart of a thread.
type groups struct {
	mu    sync.Mutex
	calls map[uint64][]*pendingCall
	// destroys are the PreMulSum operators destroyed inside a group that
	// one of its deferred calls takes: the real NCCL destroys them after
	// the group's calls ran, since any of them may yet be handed to it
	// (DestroyRedOp).
	destroys map[uint64][]groupOp
}

// groupOp is an operator of a communicator.
type groupOp struct {
	h  Handle
	op nccl.RedOp
}

// pendingCall is a deferred call; forked says its side stream forked from
// its stream in phase 0.
type pendingCall struct {
	call Call
	// op is the call's operator as resolved when it was made: a
	// PreMulSum op may be destroyed before the group ends.
	op     operator
	c      *comm
	forked bool
}

func (g *groups) add(group uint64, p *pendingCall) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls[group] = append(g.calls[group], p)
}

func (g *groups) get(group uint64) []*pendingCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[group]
}

func (g *groups) take(group uint64) []*pendingCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	calls := g.calls[group]
	delete(g.calls, group)
	return calls
}

// destroyLater keeps op of h for the real NCCL to destroy at group's end,
// if a deferred call of the group takes it, and reports whether it does.
func (g *groups) destroyLater(group uint64, h Handle, op nccl.RedOp) bool {
	if op < nccl.NumOps {
		return false // a built-in operator: NCCL refuses its destroy, at once
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.calls[group] {
		if p.call.Comm == h && p.call.Op == op {
			if g.destroys == nil {
				g.destroys = map[uint64][]groupOp{}
			}
			g.destroys[group] = append(g.destroys[group], groupOp{h, op})
			return true
		}
	}
	return false
}

// destroyDeferred has the real NCCL destroy the operators destroyed inside
// group, once its calls ran (or were dropped).
func (s *Shim) destroyDeferred(group uint64) {
	s.groups.mu.Lock()
	ops := s.groups.destroys[group]
	delete(s.groups.destroys, group)
	s.groups.mu.Unlock()
	for _, d := range ops {
		if r := s.real.RedOpDestroy(d.h, d.op); r != nccl.Success {
			s.fail(fmt.Errorf("detcoll: ncclRedOpDestroy(%d) after the group's end: %v", int(d.op), r))
		}
	}
}

// GroupDrop forgets a group's deferred calls: ncclGroupSimulateEnd ends
// a group without running it.
func (s *Shim) GroupDrop(group uint64) {
	s.groups.take(group)
	s.destroyDeferred(group)
}

// GroupEnd is the shim's part of the outermost ncclGroupEnd of group:
// phase 0 before the real one, phase 1 after it. forwarded says the
// group also holds operations of the real NCCL. It returns the first
// failure of the group's deferred calls, and after phase 0 whether calls
// are left for phase 1 (the C boundary makes no second crossing for a
// group that phase 0 finished).
func (s *Shim) GroupEnd(group uint64, phase int, forwarded bool) (nccl.Result, bool) {
	if phase == 0 {
		calls := s.groups.get(group)
		if !forwarded && allServed(calls) {
			r := s.runGroup(s.groups.take(group))
			s.destroyDeferred(group)
			return r, false
		}
		if forwarded {
			for _, p := range calls {
				if err := s.fork(p); err != nil {
					// The peers expect the calls: phase 1 still makes
					// them (on their own streams where not forked) and
					// joins what forked.
					return s.fail(err), true
				}
			}
		}
		return nccl.Success, len(calls) > 0
	}
	r := s.runGroup(s.groups.take(group))
	s.destroyDeferred(group)
	return r, false
}

// allServed reports whether every call's communicator is served now.
func allServed(calls []*pendingCall) bool {
	for _, p := range calls {
		p.c.mu.Lock()
		st := p.c.state
		p.c.mu.Unlock()
		if st != served {
			return false
		}
	}
	return true
}

// fork makes p's side stream follow p's stream as it is before the
// group's operations are queued. A pending communicator that cannot fork
// runs its call after the group instead (its setup will tell whether the
// device works at all).
func (s *Shim) fork(p *pendingCall) error {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	err := s.forkLocked(c, p.call.Stream)
	if err != nil && c.state == pending {
		return nil
	}
	p.forked = err == nil
	return err
}

func (s *Shim) forkLocked(c *comm, stream uintptr) error {
	if c.side == 0 {
		side, err := s.dev.NewStream()
		if err != nil {
			return fmt.Errorf("detcoll: a stream for the group's calls: %w", err)
		}
		c.side = side
	}
	if err := s.dev.Fork(c.side, stream); err != nil {
		return fmt.Errorf("detcoll: fork the group's call from stream %#x: %w", stream, err)
	}
	return nil
}

// runGroup runs the deferred calls in the order they were made, then
// joins the forked ones' streams; the first failure is the result.
func (s *Shim) runGroup(calls []*pendingCall) nccl.Result {
	first := nccl.Success
	for _, p := range calls {
		if r := s.runDeferred(p); r != nccl.Success && first == nccl.Success {
			first = r
		}
	}
	for _, p := range calls {
		if !p.forked {
			continue
		}
		p.c.mu.Lock()
		err := s.dev.Fork(p.call.Stream, p.c.side)
		p.c.mu.Unlock()
		if err != nil && first == nccl.Success {
			first = s.fail(fmt.Errorf("detcoll: join stream %#x to the group's calls: %w", p.call.Stream, err))
		}
	}
	return first
}

// runDeferred makes one deferred call: detcoll's, on its side stream when
// forked, else on its own; or, where the communicator is not served after
// all (its setup failed), the real NCCL's, on the call's stream, after
// the group.
func (s *Shim) runDeferred(p *pendingCall) nccl.Result {
	c, call := p.c, p.call
	c.mu.Lock()
	defer c.mu.Unlock()
	stream := call.Stream
	if p.forked {
		stream = c.side
	}
	r, v := s.run(c, call, &p.op, stream, s.rec.now())
	if v == Handed {
		return s.real.Reduction(call)
	}
	return r
}
