package cpu

import (
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
	"github.com/detcoll/detcoll/internal/core/settings"
)

// Streamed calls: a large all-gather or broadcast whose peers copy each
// chunk of a rank's staging as soon as it is staged, rather than after the
// whole input is.
//
// Why. A broadcast through staging is two copies one after the other (the
// root stages, then the others copy out), so at 16 MiB it took as long as
// Open MPI's; streamed, the two overlap. An all-gather rank copies its
// input three times (into staging, and into its own slot; a peer copies
// it out of staging); streamed, each chunk goes to the rank's own slot
// right after it was staged, from the cache rather than from memory, and
// the peers copy it out soon after it was written.
//
// How, within the protocol (contract section 4). A streamed call reserves
// as usual, resets this rank's staged-bytes word (offStaged) to 0, signs
// and publishes its stage word before staging its data, and waits for
// every peer's stage word and compares the signatures before it writes
// any output, so a mismatch still fails on every rank with nothing
// changed. Then it stages chunk after chunk, publishing the byte count
// after each (a release, like the stage word), and a peer waits for that
// count to cover a chunk (acquire; bounded by the call's deadline and the
// abort words like every wait) before reading it. The reset needs no
// sequence number: it happens after reserve, when every peer has finished
// the previous call and so reads the word no more, and before the stage
// publication, which any reader of this call waits for first. Staging is
// released by done as before. Whether a call streams depends on its size
// and streamMin, which every rank takes from rank 0 at Open: a streamed
// rank's stage word means "signed", not "staged", so the ranks of one
// call must agree.

// streamChunk is how many bytes a streamed call stages between two
// publications. 1 MiB, not less: Go's copy turns non-temporal at 1 MiB
// (copy.go), and past the cache those stores are what makes the large
// copies fast; 256 KiB chunks (ordinary stores) made 16-64 MiB
// all-gathers slower than not streaming at all (docs/thresholds.md).
const streamChunk = 1 << 20

// envStreamChunk overrides streamChunk, for measuring it. It only trades
// speed and may differ between ranks (peers wait for byte counts, not for
// chunks).
const envStreamChunk = settings.CPUStreamChunk

func streamChunkFromEnv() (int, error) { return base.TuningKnob(envStreamChunk, streamChunk, 1, 1) }

// computeStreamed produces this rank's outputs of a streamed call, staging
// its input on the way.
func (c *Comm) computeStreamed(k call, req *base.Request) error {
	if req.Op == base.OpBroadcast {
		return c.broadcastStreamed(k, req)
	}
	return c.allGatherStreamed(k, req.Out[0], req.In[0])
}

// publishStaged tells the peers that the first n bytes of this call's
// staging are written.
func (c *Comm) publishStaged(n int) { c.publish(offStaged, uint64(n)) }

// waitStaged waits until peer p has staged at least n bytes of this call.
func (c *Comm) waitStaged(k call, p, n int) error {
	v := &c.view
	*v = peers{c: c, off: offStaged, only: p}
	return c.wait(k, v, uint64(n), proto.PhaseStaged)
}

// broadcastStreamed is a streamed broadcast: the root stages its buffer
// chunk by chunk while the others copy each chunk out.
func (c *Comm) broadcastStreamed(k call, req *base.Request) error {
	buf := req.Out[0] // == req.In[0]
	n := len(buf)
	if req.Root == c.rank {
		stage := c.segs[c.rank].payload[:n]
		for off := 0; off < n; off += c.chunk {
			end := min(off+c.chunk, n)
			copyCached(stage[off:end], buf[off:end], c.cached)
			c.publishStaged(end)
		}
		return nil
	}
	src := c.segs[req.Root].payload[:n]
	for off := 0; off < n; off += c.chunk {
		end := min(off+c.chunk, n)
		if err := c.waitStaged(k, req.Root, end); err != nil {
			return err
		}
		copyCached(buf[off:end], src[off:end], c.cached)
	}
	return nil
}

// allGatherStreamed is a streamed all-gather: chunk by chunk, this rank
// stages its input, copies the chunk (now in the cache) into its own slot,
// then copies the same chunk of every peer's input as it becomes ready.
func (c *Comm) allGatherStreamed(k call, out, in []byte) error {
	n := len(in)
	stage := c.segs[c.rank].payload[:n]
	mine := out[c.rank*n : (c.rank+1)*n]
	inPlace := &in[0] == &mine[0]
	for off := 0; off < n; off += c.chunk {
		end := min(off+c.chunk, n)
		copyCached(stage[off:end], in[off:end], c.cached)
		c.publishStaged(end)
		if !inPlace {
			copyCached(mine[off:end], in[off:end], c.cached)
		}
		for p, s := range c.segs {
			if p == c.rank {
				continue
			}
			if err := c.waitStaged(k, p, end); err != nil {
				return err
			}
			copyCached(out[p*n+off:p*n+end], s.payload[off:end], c.cached)
		}
	}
	return nil
}
