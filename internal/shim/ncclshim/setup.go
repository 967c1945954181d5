package ncclshim

import (
	"context"
	"fmt"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/backend/cuda"
	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// setup opens c's detcoll communicator over the real one; c.mu is held and
// c is pending. follow is the stream of the call that needs it, or 0 at
// init: the setup's NCCL calls queue after the work queued there, so that
// they take their turn on the communicator.
//
// The rounds: who every rank is (process, host), then detcoll's Open,
// then the agreement. Each rank ends with the same state: served if every
// rank's Open succeeded, unserved (with the reason) otherwise.
func (s *Shim) setup(c *comm, follow uintptr) {
	ctx, cancel := context.WithTimeout(c.ctx, s.settings.Timeout)
	defer cancel()
	// detcoll's Open makes its device's primary context current; the
	// caller's thread gets its own back.
	defer KeepCurrentContext()()
	start := time.Now()
	defer func() {
		took := time.Since(start)
		s.rec.setup(commRecord{World: c.world, Rank: c.rank, Device: c.device, Served: c.state == served, Hosts: c.hosts, Why: c.why,
			Capacity: c.capacity, BufferBytes: c.buffer, SetupMS: float64(took.Microseconds()) / 1e3})
		if s.Debug == nil {
			return
		}
		what := "not served: " + c.why
		if c.state == served {
			what = fmt.Sprintf("served by detcoll, calls cut at %s, %s MiB of device memory (and %s more at its first reduce-scatter over that)",
				formatBytes(c.capacity), mib(c.buffer), formatBytes(c.capacity))
		}
		s.Debug(fmt.Sprintf("communicator %#x, rank %d of %d, device %d: %s (setup %v)", c.h, c.rank, c.world, c.device, what, took.Round(time.Microsecond)))
	}()
	unserve := func(format string, args ...any) {
		c.state, c.why = unserved, fmt.Sprintf(format, args...)
		if c.rdv != nil {
			c.rdv.close()
			c.rdv = nil
		}
	}
	for _, q := range []struct {
		name  string
		field *int
		ask   func(Handle) (int, nccl.Result)
	}{{"ncclCommCount", &c.world, s.real.CommCount}, {"ncclCommUserRank", &c.rank, s.real.CommUserRank}, {"ncclCommCuDevice", &c.device, s.real.CommCuDevice}} {
		if *q.field >= 0 {
			continue
		}
		v, r := q.ask(c.h)
		if r != nccl.Success {
			unserve("detcoll could not set it up: %s failed (%d)", q.name, r)
			return
		}
		*q.field = v
	}
	t, err := newDeviceTransport(s.real, s.dev, c.h, c.world, follow)
	if err != nil {
		unserve("detcoll could not set it up: %v", err)
		return
	}
	r := newRendezvous(t, c.world, c.rank)
	c.rdv = r
	ids, err := r.identify(ctx, s.self(s.getpid()))
	if err != nil {
		unserve("detcoll could not set it up: %v", err)
		return
	}
	hosts, why, ids := machinesOf(ids, s.settings)
	if why != "" {
		unserve("%s", why)
		return
	}
	stop := make(chan struct{})
	go r.watch(ids, s.alive, stop)
	c.capacity = s.capacity(c.world)
	o := detcoll.Options{
		Backend: s.backend, WorldSize: c.world, Rank: c.rank, Device: c.device,
		Capacity: c.capacity, Timeout: s.settings.Timeout, Rendezvous: r,
	}
	if hosts > 1 {
		// The host's communicators meet over the rails' Host view, which
		// rides on r too.
		o.Rendezvous = nil
		var err error
		if o, err = s.rails(ctx, o, railSetup{r}, hosts); err != nil {
			close(stop)
			railSetup{r}.Leave(ctx, err)
			unserve("detcoll could not set up its rails between the %d machines: %v", hosts, err)
			return
		}
	}
	dc, err := s.open(ctx, o)
	if err == nil && c.world > 1 {
		// Reduce off the root writes here; allocated now, outside any
		// graph capture a later Reduce may be in.
		_, err = s.discardOf(c.device)
	}
	if err == nil {
		err = r.agree(ctx)
	}
	if err != nil {
		close(stop)
		if dc != nil {
			cctx, ccancel := context.WithTimeout(context.Background(), closeTimeout)
			dc.Abort(err)
			dc.Close(cctx)
			ccancel()
		}
		unserve("detcoll could not set it up: %v", err)
		return
	}
	r.seal()
	c.buffer = cuda.BufferBytes(c.capacity, c.world)
	c.stopWatch = stop
	c.dc, c.state, c.hosts = dc, served, hosts
	c.active.Store(&active{dc})
}
