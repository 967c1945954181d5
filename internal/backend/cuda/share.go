package cuda

import (
	"sync"

	"github.com/detcoll/detcoll/internal/core/base"
)

// Kernels that share a GPU.
//
// A launch that waits for peers keeps its multiprocessors while it spins,
// and it can finish only once every peer's kernel of the same call runs.
// When several of detcoll's kernels share a GPU (ranks of one
// communicator under MPS or time-sliced, communicators on streams the
// caller does not order, detcoll beside NCCL), each must therefore find
// room while the others wait. Every launch that may wait takes at most
// maxBlocks blocks (defaultMaxBlocks; planner), whatever the size of the
// GPU, as NCCL takes one block per channel; so fit(resident, maxBlocks)
// such kernels are resident on a GPU at once: 8 on an H200. Past that a
// kernel may not be scheduled until another finishes; its peers' waits
// then end at the communicator's timeout with a timeout error, never a
// hang. Open refuses outright a communicator that puts more of its own
// ranks on one GPU than fit there, since every call of it would time out,
// and warns (its logger) when the communicators this process holds on a
// GPU may together put more kernels there than fit.
//
// Within a launch no block waits for another (collective.cu): an LL
// launch's blocks finish whatever order the GPU starts them in, so it
// needs only one of its blocks resident to make progress. The staging and
// push paths publish from a launch's last block, so a peer that waits for
// such a word needs every block of that launch to run: the cap keeps them
// all resident beside the blocks that wait.

// defaultMaxBlocks is the blocks of a launch that may wait at world
// ranks: 48 up to 2 ranks, 32 from 3. Every kernel keeps at least 2 blocks
// of 512 threads on each multiprocessor (collective.cu's launch bounds);
// those of W <= 2 keep 4 (they need fewer registers). So on an H200 (132
// multiprocessors) the launches of 8 ranks or communicators fit at once
// with room to spare for other kernels. Room matters: launches of 64
// blocks at W=4 timed out in run 4's conformance sweep though fit allowed
// them (the occupancy was not logged), and a multiprocessor that runs
// another kernel's block may have no place left for one of ours. Measured under MPS at W=2 (results/gpu/
// share-2026-12-02, run 2): against launches of half the GPU, 64 blocks
// kept the all-reduce's time (256 MiB: 683 us, 684 before), 48 cost 5%
// there and 14% at 1 MiB, 32 cost 18% and 30%. Between GPUs NVLink (390
// GB/s a direction) bounds a large call before 48 blocks' share of HBM
// does (the run's README has the arithmetic).
func defaultMaxBlocks(world int) int {
	if world <= 2 {
		return 48
	}
	return 32
}

// busIDLen is the bytes of a PCI bus id in the Open exchange
// ("0000:19:00.0" and its longer forms).
const busIDLen = 32

// fit is how many kernels that may wait, of maxBlocks blocks each, are
// resident on a GPU that holds resident blocks at once; at least 1.
func fit(resident, maxBlocks int) int { return max(1, resident/max(1, maxBlocks)) }

// fit is fit of this planner's GPU.
func (p planner) fit() int { return fit(p.resident, p.maxBlocks) }

// gpuOf is what a rank told at Open of the GPU it runs on.
type gpuOf struct {
	busID string
	fit   int
}

// sharing is a communicator's place on its GPU: how many of its ranks run
// there (its kernels of one call), and the process-wide count it joined.
type sharing struct {
	busID string
	ranks int // this communicator's ranks on busID, this one included
	fit   int
}

// kernelsOn counts, per GPU, the kernels of one call of every open
// communicator of this process that has ranks there: the kernels that may
// be waiting at once when the communicators' calls overlap.
var kernelsOn = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// count takes every rank's GPU (gpus[r] is rank r's) and returns an error,
// the same on every rank, when a GPU holds more of the communicator's
// ranks than fit there. Otherwise it joins the process-wide count of
// rank's GPU, which leave gives back.
func (s *sharing) count(rank, maxBlocks int, gpus []gpuOf) error {
	ranks := map[string][]int{}
	for r, g := range gpus {
		ranks[g.busID] = append(ranks[g.busID], r)
	}
	for _, g := range gpus {
		if rs := ranks[g.busID]; len(rs) > g.fit {
			return base.Invalidf("cuda: ranks %v share the GPU at %s, where at most %d of detcoll's kernels fit at once "+
				"(the blocks it holds at once / %d blocks per launch, %s): every call would time out; run at most %d ranks per GPU",
				rs, g.busID, g.fit, maxBlocks, envMaxBlocks, g.fit)
		}
	}
	me := gpus[rank]
	*s = sharing{busID: me.busID, ranks: len(ranks[me.busID]), fit: me.fit}
	kernelsOn.Lock()
	kernelsOn.n[s.busID] += s.ranks
	kernelsOn.Unlock()
	return nil
}

// crowded reports whether this process's open communicators may put more
// kernels on s's GPU than fit, and how many: Open's warning.
func (s *sharing) crowded() (int, bool) {
	if s.busID == "" {
		return 0, false
	}
	kernelsOn.Lock()
	defer kernelsOn.Unlock()
	n := kernelsOn.n[s.busID]
	return n, n > s.fit
}

// leave gives back s's place in the process-wide count; Close calls it.
func (s *sharing) leave() {
	if s.busID == "" {
		return
	}
	kernelsOn.Lock()
	if kernelsOn.n[s.busID] -= s.ranks; kernelsOn.n[s.busID] <= 0 {
		delete(kernelsOn.n, s.busID)
	}
	kernelsOn.Unlock()
	s.busID = ""
}
