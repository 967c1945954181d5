package cuda

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// The signature check of a call across hosts, on the device
// (treesum.cu's dc_rail_sign and dc_rail_check): internal/backend/hier
// queues, before each call's schedule, this rank's signature, the rail's
// gather of every host's, and the check. Nothing waits on the host, so a
// call across hosts can be captured in a CUDA graph and a replay is
// checked as an eager call is. A mismatch reaches the host through the
// rail's record, which refresh reads as it reads the error record; a
// gather that does not end within the timeout (a host skipped the call,
// or called nothing more) is the monitor's to find (railStuck).

// Offsets in the rail's device memory and in its record; treesum.cu's
// DC_RAIL_* are the same.
const (
	railMine = 64  // dev: this rank's signature
	railAll  = 128 // dev: every host's, in host order

	railArrived = 0  // record: the sequence of the last call signed
	railChecked = 8  // record: the sequence of the last call checked
	railCode    = 16 // record: nonzero once a check found a mismatch
	railSeq     = 24 // record: the mismatched call's sequence
	railOp      = 32 // record: the last signed call's operation word
	railRecSigs = 64 // record: at a mismatch, every host's signature

	railSigBytes = 8 * proto.SignatureWords
)

// railArgs is treesum.cu's RailArgs.
type railArgs struct {
	Words    [proto.SignatureWords]uint64
	Dev, Rec uint64
	Hosts    uint32
	_        uint32
}

// railSigs is the rail's check of one communicator across hosts.
type railSigs struct {
	hosts  int
	dev    driver.DevicePtr // the counter, this rank's signature, every host's
	rec    driver.HostMem
	view   []byte // rec's bytes, which the host reads (tests: memory of their own)
	recDev driver.DevicePtr
	args   *railArgs // reused: see Comm.args

	// The monitor's view of the checks' progress (railStuck), which only
	// the monitor touches.
	checked uint64
	since   time.Time
}

// PrepareRail sets up the signature check of calls across hosts (hosts
// of them): its memory, and the kernels of treesum.cu for that many
// hosts. It runs before any call, so that nothing is allocated or loaded
// while a call is being captured in a graph.
func (c *Comm) PrepareRail(hosts int) error {
	if hosts < 2 || hosts > maxLeaves {
		return base.Invalidf("cuda: a signature check across %d hosts: want 2 to %d", hosts, maxLeaves)
	}
	return c.onThread(func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if r := c.rail.Load(); r != nil {
			if r.hosts != hosts {
				return base.Invalidf("cuda: the rail's check is set up for %d hosts, not %d", r.hosts, hosts)
			}
			return nil
		}
		// T over the hosts (hosts leaves), and over two: the average's
		// module and halving's steps. Loaded now, not in a capture.
		for _, leaves := range []int{hosts, 2} {
			if _, err := c.treeSums(leaves); err != nil {
				return err
			}
		}
		r := &railSigs{hosts: hosts, args: new(railArgs)}
		var err error
		n := railAll + hosts*railSigBytes
		if r.dev, err = driver.MemAlloc(n); err != nil {
			return err
		}
		// The memset is on the legacy stream, which a caller's
		// non-blocking stream does not wait for: done before any call.
		if err = driver.MemsetD8(r.dev, 0, n); err == nil {
			err = driver.CtxSynchronize()
		}
		if err == nil {
			r.rec, err = driver.MemHostAllocMapped(railRecSigs + hosts*railSigBytes)
		}
		if err == nil {
			r.view = r.rec.Bytes()
			clear(r.view)
			r.recDev, err = driver.MemHostGetDevicePointer(r.rec)
		}
		if err != nil {
			r.free()
			return err
		}
		c.rail.Store(r)
		if c.stopMonitor == nil {
			// One rank per host: no peer here to watch, but the rail's
			// check to read.
			c.stopMonitor = make(chan struct{})
			c.monitorDone = make(chan struct{})
			go c.monitor()
		}
		return nil
	})
}

// free releases r's memory (release, or a failed PrepareRail).
func (r *railSigs) free() {
	if r.dev != 0 {
		driver.MemFree(r.dev)
	}
	if r.rec.Len() != 0 {
		driver.MemFreeHost(r.rec)
	}
}

// SignRail queues on s this rank's signature of a call across hosts (sig;
// its sequence is the device's count of such calls) and returns where the
// rail gathers it from and into: n bytes from send on every host into
// recv, in host order. CheckRail follows the gather.
func (c *Comm) SignRail(sig base.Signature, s uintptr) (send, recv uint64, n int, err error) {
	err = c.onThread(func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		t, r, err := c.railKernels()
		if err != nil {
			return err
		}
		r.args.Words = proto.EncodeSignature(sig)
		return c.railLaunch(t.sign, r, s)
	})
	if err != nil {
		return 0, 0, 0, err
	}
	r := c.rail.Load()
	return uint64(r.dev) + railMine, uint64(r.dev) + railAll, railSigBytes, nil
}

// CheckRail queues on s the comparison of every host's signature, which
// the rail has gathered, with this rank's.
func (c *Comm) CheckRail(s uintptr) error {
	return c.onThread(func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		t, r, err := c.railKernels()
		if err != nil {
			return err
		}
		return c.railLaunch(t.check, r, s)
	})
}

// railKernels returns the module and the check's state; c.mu is held.
func (c *Comm) railKernels() (*treeSums, *railSigs, error) {
	r := c.rail.Load()
	if r == nil {
		return nil, nil, base.Invalidf("cuda: a call across hosts before PrepareRail")
	}
	t, err := c.treeSums(r.hosts) // loaded by PrepareRail
	return t, r, err
}

// railLaunch launches f of the rail's check, one thread; c.mu is held.
func (c *Comm) railLaunch(f driver.Function, r *railSigs, s uintptr) error {
	r.args.Dev, r.args.Rec, r.args.Hosts = uint64(r.dev), uint64(r.recDev), uint32(r.hosts)
	return driver.LaunchStruct(f, driver.LaunchConfig{Grid: driver.Dim3{X: 1, Y: 1, Z: 1},
		Block: driver.Dim3{X: 1, Y: 1, Z: 1}, Stream: driver.Stream(s)}, r.args)
}

// word is the host's atomic view of the record's word at off.
func (r *railSigs) word(off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&r.view[off]))
}

// mismatch returns the *MismatchError a check recorded, or nil: every
// rank's signature, each host's ranks (g of them) with their host's.
func (r *railSigs) mismatch(g int) error {
	if r.word(railCode).Load() == 0 {
		return nil
	}
	mem := r.view
	sigs := make([]base.Signature, 0, r.hosts*g)
	for h := range r.hosts {
		var w [proto.SignatureWords]uint64
		for k := range w {
			w[k] = binary.LittleEndian.Uint64(mem[railRecSigs+h*railSigBytes+8*k:])
		}
		for range g {
			sigs = append(sigs, proto.DecodeSignature(w))
		}
	}
	return &base.MismatchError{Signatures: sigs}
}

// stuck returns a *TimeoutError when the rail's gather of a call's
// signatures has not ended within timeout of the monitor first seeing it
// begin, else nil. Only the monitor calls it.
func (r *railSigs) stuck(timeout time.Duration, g int) error {
	arrived, checked := r.word(railArrived).Load(), r.word(railChecked).Load()
	now := time.Now()
	if arrived == checked || checked != r.checked || r.since.IsZero() {
		r.checked, r.since = checked, now
		return nil
	}
	if now.Sub(r.since) < timeout {
		return nil
	}
	// The call waiting is the first not checked; the operation known is
	// the last signed one's, the same call unless calls queued behind it.
	seq := checked + 1
	var op base.Op
	if arrived == seq {
		op = base.Op(uint32(r.word(railOp).Load()))
	}
	return &base.TimeoutError{Op: op, Seq: seq, After: timeout,
		Phase: fmt.Sprintf("waiting for the other hosts' signatures of call %d across hosts (the rail of local rank %d): a host skipped the call, or makes no more", seq, g)}
}

// refreshRail makes a mismatch the rail's check recorded this
// communicator's failure, and tells the peers (every rank of the job: the
// rendezvous is the job's), once.
func (c *Comm) refreshRail() {
	if c.cause.Load() != nil {
		return
	}
	c.hostMu.RLock() // Close frees the record (release)
	var err error
	if r := c.rail.Load(); r != nil {
		err = r.mismatch(c.world)
	}
	c.hostMu.RUnlock()
	if err != nil {
		c.poison(err, true)
	}
}

// watchRail is the monitor's look at the rail's check: a mismatch, or a
// gather that has not ended within the timeout.
func (c *Comm) watchRail() {
	c.refreshRail()
	r := c.rail.Load()
	if r == nil || c.cause.Load() != nil {
		return
	}
	if err := r.stuck(c.timeout, c.rank); err != nil {
		c.poison(err, true)
	}
}
