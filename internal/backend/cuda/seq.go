package cuda

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// The sequence numbers of a communicator's calls start at a random seq0,
// which rank 0 draws and Open shares (mapPeers): a communicator rebuilt in
// memory that an earlier one used (the same addresses, after a failure,
// say) then cannot take a late LL line of the earlier one's kernels for
// its own data, as it could if every communicator counted from 1 (the
// chance that two draws' flags meet is 2^-32 per call).
//
// seq0 lies in [2^32, 2^32 + 2^62): seq - 2 never wraps below 0 at the
// first call, and seq never wraps past 2^64 (2^62 calls at a million a
// second is 146,000 years), so the kernels' comparisons (word >= seq) hold
// for the communicator's life. Flags are seq mod 2^32 and slots seq mod 2,
// whatever seq0; initWords gives every LL line the flag of seq0 - 2, which
// no call within 2^32 - 2 of seq0 carries, and the kernels' refresh every
// 2^31 calls keeps every line's flag that young.
func drawSeq0() uint64 { return 1<<32 + rand.Uint64N(1<<62) }

// initWords sets this rank's control block and LL area for a first call
// at seq0: every sequence word (stage, done, reduced, and the acks and
// sent words peers push here) at seq0 - 1, the peer table, everything
// else 0; every LL line's flag at seq0 - 2. Peers write here only after
// Open's last barrier.
func (c *Comm) initWords() error {
	ctrl := make([]byte, ctrlSize)
	put := func(off int, v uint64) { binary.LittleEndian.PutUint64(ctrl[off:], v) }
	before := c.seq0 - 1
	put(offStage, before)
	put(offDone, before)
	put(offReduced, before)
	for p, ptr := range c.peers {
		put(offPeers+8*p, uint64(ptr))
		put(offAck+8*p, before)
		put(offSent1+8*p, before)
		put(offSent2+8*p, before)
	}
	if err := driver.MemcpyHtoD(c.buf, ctrl); err != nil {
		return err
	}
	// A line is two 8-byte halves of 4 data bytes and the flag: 32-bit
	// words all equal to the flag make every line carry it (the scratch
	// images after the slots get the same bytes, which nothing reads).
	ll := llAreaSize(c.world, c.plan.llMax)
	return driver.MemsetD32(c.buf+driver.DevicePtr(c.llOff), uint32(c.seq0-2), ll/4)
}

// call returns the number, counted from 1, of the call that ran as seq
// (0 stays 0: no call).
func (c *Comm) callNumber(seq uint64) uint64 {
	if seq == 0 || c.seq0 == 0 {
		return seq
	}
	return seq - c.seq0 + 1
}
