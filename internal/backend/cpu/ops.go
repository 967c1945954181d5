package cpu

import (
	"unsafe"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// Do runs one collective call that base.Validate accepted. It returns when
// this rank's output is complete.
func (c *Comm) Do(req *base.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if err := c.stage.CheckRequest(req); err != nil {
		return err
	}
	c.cached = c.footprint(req) <= c.cachedMax
	staged := req.Op == base.OpAllReduceStaged // the staging is the input: Stage reserved it
	sig := req.Signature()
	if req.Red == num.PreMulSum {
		req = c.premultiplied(req)
		defer c.dropScaled()
	}
	if err := c.run(c.newCall(req.Op), req, sig, proto.Schedule(c.path(req), staged)); err != nil {
		return err
	}
	if req.Red == num.Avg {
		for _, out := range req.Out {
			num.Average(req.DType, out, c.world)
		}
	}
	return nil
}

// premultiplied returns req with its inputs times its scalar, each
// product rounded once (PreMulSum's first step), in memory of c's own; a
// staged all-reduce's input is scaled in place in the staging, which is
// still this rank's alone. The rest of the call is a sum.
func (c *Comm) premultiplied(req *base.Request) *base.Request {
	if req.Op == base.OpAllReduceStaged {
		in := c.segs[c.rank].payload[:len(req.Out[0])]
		num.PreMultiply(req.DType, in, in, req.Scalar)
		return req
	}
	total := 0
	for _, in := range req.In {
		total += len(in)
	}
	if len(c.scaled) < total {
		c.scaled = num.AlignedBytes(total)
	}
	// The request and its input list are c's, reused: a call allocates
	// nothing in the steady state.
	c.scaledReq = *req
	c.scaledIns = c.scaledIns[:0]
	off := 0
	for _, in := range req.In {
		s := c.scaled[off : off+len(in) : off+len(in)]
		num.PreMultiply(req.DType, s, in, req.Scalar)
		c.scaledIns = append(c.scaledIns, s)
		off += len(in) // element sizes divide every length: the views stay aligned
	}
	c.scaledReq.In = c.scaledIns
	return &c.scaledReq
}

// dropScaled forgets the caller's buffers that premultiplied's request
// holds, so that the communicator does not keep them alive.
func (c *Comm) dropScaled() {
	c.scaledReq = base.Request{}
	clear(c.scaledIns)
}

// Stage reserves this rank's staging memory for a staged all-reduce of n
// bytes and returns it for the caller to write its input into. It waits,
// like the first step of any call, until every peer has released the
// staging.
func (c *Comm) Stage(n int) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return nil, err
	}
	if !c.stage.Pending() {
		k := c.newCall(base.OpAllReduceStaged)
		if err := c.run(k, nil, base.Signature{}, proto.Schedule(proto.ReserveOnly, false)); err != nil {
			return nil, err
		}
	}
	c.stage.Begin(n)
	return c.segs[c.rank].payload[:n:n], nil
}

// path is how req goes through the protocol (proto.ChoosePath).
func (c *Comm) path(req *base.Request) proto.Path {
	f := proto.PathFacts{Op: req.Op, World: c.world, Buffers: len(req.Out)}
	if len(req.In) > 0 {
		f.In = len(req.In[0])
	}
	if len(req.Out) > 0 {
		f.Out = len(req.Out[0])
	}
	return proto.ChoosePath(proto.SharedMemory, f, proto.Thresholds{OneShotMax: c.paths.allReduceOneShotMax, StreamMin: c.paths.streamMin})
}

// run executes a call's schedule (internal/core/proto) over shared memory. A
// failure poisons the communicator; the error returned is its cause.
func (c *Comm) run(k call, req *base.Request, sig base.Signature, steps []proto.Step) error {
	sig.Seq = k.seq
	for _, s := range steps {
		var err error
		switch s.Action {
		case proto.Await:
			err = c.waitAll(k, s.Word, s.Target(k.seq), s.Phase)
			// A peer that found the signatures differ fails before we
			// look: if every rank has staged, we can see the mismatch
			// ourselves and report it as such (proto.Prevails).
			if err != nil && s.Word == proto.Stage && c.allStaged(k.seq) {
				if merr := c.checkSignatures(sig); merr != nil {
					err = merr
				}
			}
		case proto.CopyIn:
			c.stageInputs(req)
		case proto.ResetStaged:
			c.publishStaged(0)
		case proto.Sign:
			c.segs[c.rank].writeSignature(sig)
		case proto.Publish:
			c.publish(wordOffset(s.Word), s.Target(k.seq))
			if s.Word == proto.Stage {
				c.seq = k.seq
			}
		case proto.CheckSignatures:
			err = c.checkSignatures(sig)
		case proto.Compute:
			err = c.compute(k, req)
		case proto.ReduceShard:
			c.reduceShard(req)
		case proto.Gather:
			c.gatherShards(req)
		}
		if err != nil {
			return c.fail(err)
		}
	}
	return nil
}

func (c *Comm) stageInputs(req *base.Request) {
	if req.Op == base.OpBroadcast && req.Root != c.rank {
		return
	}
	payload := c.segs[c.rank].payload
	off := 0
	for k, in := range req.In {
		// The part of our input that only we read (see ownPart) is
		// summed straight from the input: staging it would copy bytes
		// nobody else looks at (half the input at W=2).
		lo, hi := c.ownPart(req, k)
		copyCached(payload[off:off+lo], in[:lo], c.cached)
		copyCached(payload[off+hi:off+len(in)], in[hi:], c.cached)
		off = nextStaging(off, len(in))
	}
}

// ownPart returns the bytes [lo, hi) of input k that no peer reads from
// our staging, so that they need not be staged: our block of a
// reduce-scatter's input and our shard of a two-phase all-reduce's input,
// which only we sum (a peer reads our shard only after we have written
// the sum over it). Everything else, lo == hi, is read by peers.
func (c *Comm) ownPart(req *base.Request, k int) (lo, hi int) {
	switch req.Op {
	case base.OpReduceScatter, base.OpReduceScatterMany:
		m := len(req.Out[k])
		return c.rank * m, (c.rank + 1) * m
	case base.OpAllReduce:
		if c.path(req) == proto.TwoPhase {
			return c.shard(c.rank, req.DType, len(req.Out[0]))
		}
	}
	return 0, 0
}

// nextStaging returns where the staging buffer after one of n bytes at off
// starts: base.StagingLayout's rule, walked buffer by buffer so that a
// call allocates no offsets slice. Every staged op but AllReduceStaged
// (which stages through Stage, at 0) stages exactly its inputs, so this
// agrees with StagingLayout(req.InputSizes()).
func nextStaging(off, n int) int {
	return off + (n+base.StagingAlign-1)/base.StagingAlign*base.StagingAlign
}

// footprint is the memory one call of req touches on this host, as seen
// from one rank: every rank's staging (each rank reads all of it at most)
// and this rank's outputs. It decides whether the call's copies go
// through the cache (copy.go).
func (c *Comm) footprint(req *base.Request) int {
	in, out := 0, 0
	for _, b := range req.In {
		in += len(b)
	}
	for _, b := range req.Out {
		out += len(b)
	}
	if req.Op == base.OpAllReduceStaged {
		in = out
	}
	return in*c.world + out
}

func (c *Comm) allStaged(seq uint64) bool {
	for _, s := range c.segs {
		if s.load(offStage) < seq {
			return false
		}
	}
	return true
}

// checkSignatures compares every peer's signature with ours. On a mismatch
// every rank reads the same signatures, so every rank fails with the same
// list.
func (c *Comm) checkSignatures(mine base.Signature) error {
	ok := true
	for p, s := range c.segs {
		if p != c.rank && s.readSignature() != mine {
			ok = false
		}
	}
	if ok {
		return nil
	}
	sigs := make([]base.Signature, c.world)
	for p, s := range c.segs {
		sigs[p] = s.readSignature()
	}
	sigs[c.rank] = mine
	return &base.MismatchError{Signatures: sigs}
}

// compute produces this rank's outputs from the peers' staging (a streamed
// call stages its input on the way).
func (c *Comm) compute(k call, req *base.Request) error {
	if c.path(req) == proto.Streamed {
		return c.computeStreamed(k, req)
	}
	switch req.Op {
	case base.OpAllReduce, base.OpAllReduceStaged:
		c.reducer.Reduce(req.DType, req.Red.Node(), req.Out[0], c.peerSlices(0, len(req.Out[0])))
	case base.OpReduceScatter, base.OpReduceScatterMany:
		off := 0
		for k, out := range req.Out {
			c.reduceScatter(req.DType, req.Red.Node(), out, req.In[k], off)
			off = nextStaging(off, len(req.In[k]))
		}
	case base.OpAllGather, base.OpAllGatherMany:
		off := 0
		for k, out := range req.Out {
			c.allGather(out, req.In[k], off)
			off = nextStaging(off, len(req.In[k]))
		}
	case base.OpBroadcast:
		if req.Root != c.rank {
			copyCached(req.Out[0], c.segs[req.Root].payload, c.cached)
		}
	}
	return nil
}

// peerSlices returns every rank's staging bytes [lo, hi), by rank, in a
// slice reused across calls.
func (c *Comm) peerSlices(lo, hi int) [][]byte {
	c.srcs = c.srcs[:0]
	for _, s := range c.segs {
		c.srcs = append(c.srcs, s.payload[lo:hi:hi])
	}
	return c.srcs
}

// reduceShard is a two-phase all-reduce's first half: reduce-scatter into
// place. This rank sums its shard of every peer's staging (its own part
// from its input, which it did not stage: see ownPart; from the staging
// for AllReduceStaged) and writes the sum over its own staging's shard,
// which only this rank reads until the sum is published (Reduced). The
// sources are the same bytes in the same rank order whichever memory holds
// them, so the bits are too.
func (c *Comm) reduceShard(req *base.Request) {
	out := req.Out[0]
	lo, hi := c.shard(c.rank, req.DType, len(out))
	srcs := c.peerSlices(lo, hi)
	if req.Op == base.OpAllReduce {
		srcs[c.rank] = req.In[0][lo:hi]
	}
	c.reducer.Reduce(req.DType, req.Red.Node(), c.segs[c.rank].payload[lo:hi], srcs)
}

// gatherShards is the second half: every rank copies every rank's summed
// shard once all are published.
func (c *Comm) gatherShards(req *base.Request) {
	out := req.Out[0]
	for p, s := range c.segs {
		lo, hi := c.shard(p, req.DType, len(out))
		copyCached(out[lo:hi], s.payload[lo:hi], c.cached)
	}
}

// shard returns the bytes [lo, hi) of an n-byte all-reduce that rank p
// reduces: equal shards of whole cache lines, the last one shorter. Any
// split gives the same bits; this one keeps ranks off each other's lines.
func (c *Comm) shard(p int, dt num.DType, n int) (lo, hi int) {
	per := (n + c.world - 1) / c.world
	per = (per + base.StagingAlign - 1) / base.StagingAlign * base.StagingAlign
	lo = min(p*per, n)
	hi = min(lo+per, n)
	return lo, hi
}

// reduceScatter sums our block of every rank's input k (at off in the
// staging) into out; our own block comes from in itself, unstaged (see
// ownPart). out may be that very block (in place), which Reduce allows.
func (c *Comm) reduceScatter(dt num.DType, node num.RedOp, out, in []byte, off int) {
	m := len(out)
	lo := off + c.rank*m
	srcs := c.peerSlices(lo, lo+m)
	srcs[c.rank] = in[c.rank*m : (c.rank+1)*m]
	c.reducer.Reduce(dt, node, out, srcs)
}

func (c *Comm) allGather(out, in []byte, off int) {
	n := len(in)
	for p, s := range c.segs {
		slot := out[p*n : (p+1)*n]
		if p != c.rank {
			copyCached(slot, s.payload[off:off+n], c.cached)
			continue
		}
		// Our own slot comes from our input, not from our staging: the
		// same bytes, and nothing when the call is in place (in is this
		// very slot), where copying from staging would move n bytes for
		// nothing. The input was just read to stage it, so it is the more
		// likely of the two to be in cache.
		if n > 0 && &in[0] != &slot[0] {
			copyCached(slot, in, c.cached)
		}
	}
}

// Reserved is this rank's shared segment: no caller's buffer may lie in it.
func (c *Comm) Reserved() base.Region {
	mem := c.segs[c.rank].mem
	return base.Region{Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))), Len: len(mem)}
}
