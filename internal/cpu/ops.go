package cpu

import (
	"github.com/detcoll/detcoll/internal/base"
	"github.com/detcoll/detcoll/internal/num"
)

// Do runs one collective call that base.Validate accepted. It returns when
// this rank's output is complete.
func (c *Comm) Do(req *base.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if req.Op == base.OpAllReduceStaged {
		if c.staged < 0 {
			return base.Invalidf("%v: nothing staged: call Stage first", req.Op)
		}
		if len(req.Out[0]) != c.staged {
			return base.Invalidf("%v: output has %d bytes but %d were staged", req.Op, len(req.Out[0]), c.staged)
		}
	} else if c.staged >= 0 {
		return base.Invalidf("%v while a staged all-reduce is pending: call AllReduceStaged first", req.Op)
	}
	if err := c.outsideStaging(req); err != nil {
		return err
	}
	k := c.newCall(req.Op)
	if err := c.begin(k, req, req.Signature()); err != nil {
		return err
	}
	if err := c.compute(k, req); err != nil {
		return c.fail(err)
	}
	c.publish(offDone, c.seq)
	return nil
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
	if c.staged < 0 {
		if err := c.reserve(c.newCall(base.OpAllReduceStaged)); err != nil {
			return nil, c.fail(err)
		}
	}
	c.staged = n
	return c.segs[c.rank].payload[:n:n], nil
}

// begin runs the protocol's first four steps: reserve, stage the input and
// the signature, publish, wait for every peer, and compare signatures.
func (c *Comm) begin(k call, req *base.Request, sig base.Signature) error {
	seq := k.seq
	sig.Seq = seq
	if req.Op == base.OpAllReduceStaged {
		c.staged = -1 // reserved by Stage
	} else {
		if err := c.reserve(k); err != nil {
			return c.fail(err)
		}
		c.stageInputs(req)
	}
	own := c.segs[c.rank]
	own.writeSignature(sig)
	c.publish(offStage, seq)
	c.seq = seq
	if err := c.waitAll(k, offStage, seq, "waiting for peers to stage their inputs"); err != nil {
		// A peer that found the signatures differ fails before we look:
		// if every rank has staged, we can see the mismatch ourselves and
		// report it as such rather than as the peer's failure.
		if c.allStaged(seq) {
			if merr := c.checkSignatures(sig); merr != nil {
				err = merr
			}
		}
		return c.fail(err)
	}
	if err := c.checkSignatures(sig); err != nil {
		return c.fail(err)
	}
	return nil
}

func (c *Comm) stageInputs(req *base.Request) {
	if req.Op == base.OpBroadcast && req.Root != c.rank {
		return
	}
	offs, _ := base.StagingLayout(req.InputSizes())
	payload := c.segs[c.rank].payload
	for k, in := range req.In {
		copy(payload[offs[k]:], in)
	}
}

func (c *Comm) allStaged(seq uint64) bool {
	for _, s := range c.segs {
		if s.load(offStage) < seq {
			return false
		}
	}
	return true
}

// outsideStaging refuses buffers inside this rank's shared memory (a Stage
// view kept too long, say): peers read that memory during the call, so an
// output there would corrupt their results and an input there is being
// overwritten.
func (c *Comm) outsideStaging(req *base.Request) error {
	own := c.segs[c.rank].mem
	for _, bufs := range [][][]byte{req.In, req.Out} {
		for _, b := range bufs {
			if base.Overlap(b, own) {
				return base.Invalidf("%v: a buffer lies in the communicator's staging memory (a Stage view may only be written, then passed to nothing but AllReduceStaged's input)", req.Op)
			}
		}
	}
	return nil
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

// compute produces this rank's outputs from the peers' staging.
func (c *Comm) compute(k call, req *base.Request) error {
	offs, _ := base.StagingLayout(req.InputSizes())
	switch req.Op {
	case base.OpAllReduce, base.OpAllReduceStaged:
		return c.allReduce(k, req.DType, req.Out[0])
	case base.OpReduceScatter, base.OpReduceScatterMany:
		for k, out := range req.Out {
			c.reduceScatter(req.DType, out, offs[k])
		}
	case base.OpAllGather, base.OpAllGatherMany:
		for k, out := range req.Out {
			c.allGather(out, offs[k], len(req.In[k]))
		}
	case base.OpBroadcast:
		if req.Root != c.rank {
			copy(req.Out[0], c.segs[req.Root].payload)
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

func (c *Comm) allReduce(k call, dt num.DType, out []byte) error {
	if len(out) <= c.paths.allReduceOneShotMax || c.world == 1 {
		c.reducer.Reduce(dt, out, c.peerSlices(0, len(out)))
		return nil
	}
	// Reduce-scatter into place: this rank sums its shard of every peer's
	// staging and writes the sum over its own staging's shard, which only
	// this rank reads. Then every rank gathers the summed shards.
	lo, hi := c.shard(c.rank, dt, len(out))
	c.reducer.Reduce(dt, c.segs[c.rank].payload[lo:hi], c.peerSlices(lo, hi))
	c.publish(offReduced, c.seq)
	if err := c.waitAll(k, offReduced, c.seq, "waiting for peers' reduced shards"); err != nil {
		return err
	}
	for p, s := range c.segs {
		lo, hi := c.shard(p, dt, len(out))
		copy(out[lo:hi], s.payload[lo:hi])
	}
	return nil
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

func (c *Comm) reduceScatter(dt num.DType, out []byte, off int) {
	lo := off + c.rank*len(out)
	c.reducer.Reduce(dt, out, c.peerSlices(lo, lo+len(out)))
}

func (c *Comm) allGather(out []byte, off, n int) {
	for p, s := range c.segs {
		copy(out[p*n:(p+1)*n], s.payload[off:off+n])
	}
}
