package nccl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/driver"
	ncclapi "github.com/detcoll/detcoll/internal/binding/nccl"
	"github.com/detcoll/detcoll/internal/core/settings"
)

// The capabilities hier's schedule and Open look for.
var (
	_ detcoll.DeviceInterconnect  = (*Interconnect)(nil)
	_ detcoll.DeviceRailExchanger = (*Interconnect)(nil)
	_ detcoll.FailureSource       = (*Interconnect)(nil)
	_ detcoll.Aborter             = (*Interconnect)(nil)
	_ detcoll.Settler             = (*Interconnect)(nil)
	_ io.Closer                   = (*Interconnect)(nil)
)

// Interconnect is a detcoll.Interconnect over NCCL: this rank's rail (its
// data and its signatures, two NCCL communicators) and the job's store
// (the setup of the host's communicator, failures). detcoll.Open and
// Comm.Close use it; a program only passes it on, in Options.
type Interconnect struct {
	m                    Setup
	hosts, host, perHost int
	timeout              time.Duration
	dev                  driver.Device
	cuctx                driver.Context
	data, ctrl           ncclapi.Comm
	stream               driver.Stream    // the signatures' own (non-blocking)
	buf                  driver.DevicePtr // the signatures': this rank's, then every host's
	pinned               driver.HostMem   // buf's host side, for the stream's copies
	bufLen               int

	mu sync.Mutex // one signature gather at a time; guards stream's use, buf and bufLen

	freeMu  sync.Mutex // the comms are freed once: by an abort or by Close; guards freed
	freed   bool
	aborted atomic.Pointer[chan struct{}] // closed when the abort (fail) or destroy (free) started has returned; nil if none
	late    atomic.Int32                  // ncclCommInitRanks given up on, still running
	// abortedAt is when the failure's aborts returned (unix ns); -1 while
	// they run, 0 if none began.
	abortedAt atomic.Int64

	stopping atomic.Bool // a failure is being recorded: no call may touch the comms
	cause    atomic.Pointer[error]
	done     chan struct{} // closed at the first failure
	stop     chan struct{} // ends the watcher
	wg       sync.WaitGroup
	closed   sync.Once
}

// openRails sets up this rank's rail: NCCL and the driver loaded, the
// rank's GPU's context, the rail's unique ids from the store and its two
// communicators. On error it undoes what it did.
func openRails(ctx context.Context, m Setup, o detcoll.Options, hosts, host, perHost int) (_ *Interconnect, err error) {
	if err := ncclapi.Load(); err != nil {
		return nil, err
	}
	if err := driver.Load(); err != nil {
		return nil, err
	}
	ordinal := o.Device
	if n, err := driver.DeviceCount(); err == nil && ordinal >= n && n > 0 && settings.Get(settings.ShareDevices) == "1" {
		ordinal %= n // the GPU the cuda backend's Open takes for this rank
	}
	dev, err := driver.DeviceGet(ordinal)
	if err != nil {
		driver.Unload()
		return nil, fmt.Errorf("%w: nccl: device %d: %w", detcoll.ErrUnavailable, ordinal, err)
	}
	cuctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		driver.Unload()
		return nil, err
	}
	ic := &Interconnect{m: m, hosts: hosts, host: host, perHost: perHost, timeout: o.Timeout, dev: dev, cuctx: cuctx,
		done: make(chan struct{}), stop: make(chan struct{})}
	defer func() {
		if err == nil {
			return
		}
		// A half-built rail: its peers may never come, so the abort is
		// bounded, as fail's is, and what NCCL may still use is left to
		// the process's end.
		ic.fail(err)
		// An ncclCommInitRank given up on aborts its communicator on the
		// context when it returns: the context stays for it.
		if !ic.abortDone(abortWait) || ic.late.Load() != 0 {
			return
		}
		ic.onDevice(func() error {
			if ic.stream != 0 {
				ic.stream.Destroy()
			}
			if ic.buf != 0 {
				driver.MemFree(ic.buf)
				driver.MemFreeHost(ic.pinned)
			}
			return nil
		})
		dev.PrimaryCtxRelease()
		driver.Unload()
	}()
	ids, err := railIDs(ctx, m, o.Rank, perHost, func() ([]byte, error) {
		var b []byte
		for range 2 {
			id, err := ncclapi.GetUniqueID()
			if err != nil {
				return nil, err
			}
			b = append(b, id[:]...)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	for i, c := range []*ncclapi.Comm{&ic.data, &ic.ctrl} {
		var id ncclapi.UniqueID
		copy(id[:], ids[i*idBytes:])
		if *c, err = ic.initComm(ctx, m, id, o.Rank%perHost); err != nil {
			return nil, err
		}
	}
	if err := ic.onDevice(func() (err error) {
		ic.stream, err = driver.StreamCreate(driver.StreamNonBlocking)
		return err
	}); err != nil {
		return nil, err
	}
	ic.wg.Add(1)
	go ic.watch()
	return ic, nil
}

// initComm is ncclCommInitRank of one of the rail's communicators, which
// waits for every rank of the rail and cannot be interrupted: it runs on a
// goroutine of its own, and the wait for it ends at ctx's end or when a
// rank fails (the store). A communicator that comes up after that is
// aborted as it arrives.
func (ic *Interconnect) initComm(ctx context.Context, m Setup, id ncclapi.UniqueID, g int) (ncclapi.Comm, error) {
	type result struct {
		comm ncclapi.Comm
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		r.err = ic.onDevice(func() (err error) {
			r.comm, err = ncclapi.CommInitRank(ic.hosts, id, ic.host)
			return err
		})
		ch <- r
	}()
	late := func() {
		ic.late.Add(1)
		go func() {
			defer ic.late.Add(-1)
			if r := <-ch; r.err == nil {
				ic.onDevice(r.comm.Abort)
			}
		}()
	}
	select {
	case r := <-ch:
		return r.comm, r.err
	case <-m.Done():
		late()
		return 0, m.Err()
	case <-ctx.Done():
		late()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, ctx.Err()
		}
		return 0, &detcoll.TimeoutError{Op: detcoll.OpOpen, After: ic.timeout,
			Phase: fmt.Sprintf("ncclCommInitRank of the rail of local rank %d (%d hosts)", g, ic.hosts)}
	}
}

// onDevice runs f on a locked thread with the GPU's context current, as
// NCCL and the driver need.
func (ic *Interconnect) onDevice(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := ic.cuctx.SetCurrent(); err != nil {
		return err
	}
	return f()
}

// Host is the setup channel of this rank's host: the store, seen from the
// host's ranks.
func (ic *Interconnect) Host() detcoll.Rendezvous {
	return hostView{m: ic.m, first: ic.host * ic.perHost, n: ic.perHost}
}

// AllGather gathers len(send) bytes along the rail, through the
// signatures' communicator and its own non-blocking stream (its copies to
// and from the GPU too, through pinned memory): it waits for nothing the
// caller queued. It returns early
// with an error when ctx ends; the communicator's failure then aborts the
// rail (hier).
func (ic *Interconnect) AllGather(ctx context.Context, send, recv []byte) error {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if err := ic.usable(); err != nil {
		return err
	}
	n := len(send)
	if n == 0 {
		return nil
	}
	var ncclErr error
	all := n * ic.hosts
	err := ic.onDevice(func() error {
		if need := n + all; ic.bufLen < need {
			// The last gather on the stream is over (wait saw it end),
			// so the old buffers are free.
			if ic.buf != 0 {
				driver.MemFree(ic.buf)
				driver.MemFreeHost(ic.pinned)
				ic.buf, ic.bufLen = 0, 0
			}
			p, err := driver.MemAlloc(need)
			if err != nil {
				return err
			}
			h, err := driver.MemHostAllocMapped(need)
			if err != nil {
				driver.MemFree(p)
				return err
			}
			ic.buf, ic.pinned, ic.bufLen = p, h, need
		}
		copy(ic.pinned.Bytes()[:n], send)
		if err := driver.MemcpyHtoDAsync(ic.buf, ic.pinned.Slice(0, n), ic.stream); err != nil {
			return err
		}
		if ncclErr = ic.ctrl.AllGather(ic.buf, ic.buf+driver.DevicePtr(n), n, ncclapi.Uint8, ic.stream); ncclErr != nil {
			return nil
		}
		return driver.MemcpyDtoHAsync(ic.pinned.Slice(n, all), ic.buf+driver.DevicePtr(n), ic.stream)
	})
	switch {
	case err != nil: // this rank's GPU, not the rail
		return ic.fail(fmt.Errorf("nccl: signatures along the rail: %w", err))
	case ncclErr != nil:
		return ic.failNCCL(fmt.Errorf("nccl: signatures along the rail: %w", ncclErr))
	}
	if err := ic.wait(ctx); err != nil {
		return err
	}
	if err := ic.usable(); err != nil {
		return err // an abort may have ended the gather early: its bytes are not the peers'
	}
	copy(recv[:all], ic.pinned.Bytes()[n:n+all])
	return nil
}

// usable is the rail's failure, or nil. While a failure is being recorded
// (its communicators aborted: no call may touch them) it waits for the
// cause, which fail publishes within stopWait, so that the caller reports
// the cause rather than the abort.
func (ic *Interconnect) usable() error {
	if err := ic.Err(); err != nil {
		return err
	}
	if !ic.stopping.Load() {
		return nil
	}
	t := time.NewTimer(abortWait + time.Second)
	defer t.Stop()
	select {
	case <-ic.done:
		return ic.Err()
	case <-t.C:
		return errAborting
	}
}

// errAborting is what a call gets if a failure's cause is not recorded in
// time (it should not happen: fail bounds the abort).
var errAborting = fmt.Errorf("%w: nccl: the rail is being aborted", detcoll.ErrPeerLost)

// wait polls the signatures' stream until its gather is done, ctx ends or
// the rail fails.
func (ic *Interconnect) wait(ctx context.Context) error {
	for spins := 0; ; spins++ {
		if err := ic.usable(); err != nil {
			return err
		}
		var done bool
		err := ic.onDevice(func() (err error) { done, err = ic.stream.Query(); return err })
		switch {
		case err != nil:
			return ic.failNCCL(fmt.Errorf("nccl: signatures along the rail: %w", err))
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
			// hier turns this into its timeout (or its cause) and aborts
			// the rail: failing here would race it with a vaguer cause.
			return ctx.Err()
		case <-ic.done:
			return ic.Err()
		default:
		}
		// The other hosts are usually there already: spin a little, then
		// let the thread go.
		if spins < 1000 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// AllGatherDevice queues on stream s the gathering of n bytes at send from
// every rank of the rail into recv, in host order: NCCL's all-gather on
// the data communicator.
func (ic *Interconnect) AllGatherDevice(send, recv uint64, n int, s uintptr) error {
	if err := ic.usable(); err != nil {
		return err
	}
	var ncclErr error
	// No lock against fail here: an NCCL call may block (on a peer that is
	// gone), and ncclCommAbort from another thread is what ends it (run 11
	// hung with one).
	if err := ic.onDevice(func() error {
		ncclErr = ic.data.AllGather(driver.DevicePtr(send), driver.DevicePtr(recv), n, ncclapi.Uint8, driver.Stream(s))
		return nil
	}); err != nil {
		return ic.fail(fmt.Errorf("nccl: the rail's all-gather: %w", err))
	}
	if ncclErr != nil {
		return ic.failNCCL(fmt.Errorf("nccl: the rail's all-gather: %w", ncclErr))
	}
	return ic.Err()
}

// ExchangeDevice queues on stream s the sending of sendN bytes at send to
// the rail's rank on host peer and the receiving of recvN bytes from it
// into recv:
// NCCL's send and receive on the data communicator, in one group. With a
// power of two of hosts, all-reduces and reduce-scatters then halve along
// the rail (internal/backend/hier), moving the bandwidth-optimal share.
func (ic *Interconnect) ExchangeDevice(peer int, send uint64, sendN int, recv uint64, recvN int, s uintptr) error {
	if err := ic.usable(); err != nil {
		return err
	}
	var ncclErr error
	if err := ic.onDevice(func() error {
		if ncclErr = ncclapi.GroupStart(); ncclErr != nil {
			return nil
		}
		ncclErr = errors.Join(
			ic.data.Send(driver.DevicePtr(send), sendN, ncclapi.Uint8, peer, driver.Stream(s)),
			ic.data.Recv(driver.DevicePtr(recv), recvN, ncclapi.Uint8, peer, driver.Stream(s)),
			ncclapi.GroupEnd())
		return nil
	}); err != nil {
		return ic.fail(fmt.Errorf("nccl: the rail's exchange with host %d: %w", peer, err))
	}
	if ncclErr != nil {
		return ic.failNCCL(fmt.Errorf("nccl: the rail's exchange with host %d: %w", peer, ncclErr))
	}
	return ic.Err()
}

// Done is closed when the rail failed: a lost or failed rank anywhere in
// the job (the store), an NCCL asynchronous error, an abort.
func (ic *Interconnect) Done() <-chan struct{} { return ic.done }

// Err is the rail's failure, or nil.
func (ic *Interconnect) Err() error {
	if p := ic.cause.Load(); p != nil {
		return *p
	}
	return nil
}

// Abort fails the rail with cause and aborts its NCCL communicators, so
// that their kernels stop.
func (ic *Interconnect) Abort(cause error) { ic.fail(cause) }

// fail records err as the cause, unless one is, and aborts the NCCL
// communicators first: whoever hears of the failure may free memory at
// once, which waits for the device to go idle, and NCCL's kernels must be
// stopping by then (a free waiting on them while ncclCommAbort waited on
// the free hung a survivor of a kill). ncclCommAbort raises the
// communicator's abort flag, which its kernels watch, as it begins; the
// rest (its proxy threads, sockets and memory) takes NCCL up to a second
// more on the GPU machine (results/gpu/capture-hosts-2026-12-02: 1017 ms
// after a kill, once). So the cause is published once both aborts have
// returned or stopWait after they began, whichever is first: the error
// reaches the caller in about a tenth of a second, with NCCL's kernels
// told to stop; Close still waits for the aborts to return (abortDone)
// before it frees what NCCL may use.
//
// ncclCommAbort itself is bounded, by abortWait. NCCL alone, on one GPU
// shared by two virtual hosts, aborts 0.5 to 2.2 s after a peer's death
// (results/gpu/levers-2026-12-02, runs 17 and 18); inside detcoll's
// processes, in that setup, it was seen not to return at all, with 2 s
// or 10 s to do it in (runs 13, 16, 17, 19; why is not established). A
// failure must reach the caller all the same; a free of device memory
// may then wait for NCCL's kernel (nothing of detcoll's does: its frees
// wait for Settled, bounded, and leave the memory otherwise).
func (ic *Interconnect) fail(err error) error {
	ic.freeMu.Lock()
	defer ic.freeMu.Unlock()
	if p := ic.cause.Load(); p != nil {
		return *p
	}
	ic.stopping.Store(true) // from now on no call touches the communicators
	if !ic.freed {
		ic.abortedAt.Store(-1)
		ic.release(stopWait, func() {
			ic.abortAll()
			ic.abortedAt.Store(time.Now().UnixNano())
		})
	}
	ic.cause.Store(&err)
	close(ic.done)
	return err
}

// abortAll aborts both communicators at once, each on a thread with the
// GPU's context current, as NCCL's calls need. Not one after the other:
// an abort frees the communicator's device memory, which waits for the
// device to go idle, and the other communicator's kernel, spinning on
// the lost peer until its own abort flag is set, could keep it busy for
// good. (Survivors of kills hung in their first abort, one after the
// other, in results/gpu/checks-2026-12-02, kill-two-hosts-call.log;
// results/gpu/aborts-2026-12-02 has what aborting both at once did.)
func (ic *Interconnect) abortAll() {
	var wg sync.WaitGroup
	for _, c := range []ncclapi.Comm{ic.data, ic.ctrl} {
		if c == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ic.onDevice(func() error { return c.Abort() })
		}()
	}
	wg.Wait()
}

// Aborted says whether the rail's failure aborted its NCCL communicators
// (not when they had been destroyed already) and, if so, when
// ncclCommAbort had returned for both (the zero time: not yet, or
// never). The tools report it beside a kill's time to error.
func (ic *Interconnect) Aborted() (aborting bool, at time.Time) {
	switch ns := ic.abortedAt.Load(); {
	case ns == 0:
		return false, time.Time{}
	case ns < 0:
		return true, time.Time{}
	default:
		return true, time.Unix(0, ns)
	}
}

// abortWait bounds the wait for ncclCommAbort or ncclCommDestroy to
// return (Close, free); stopWait bounds fail's, after which the cause is
// published while the aborts go on.
const (
	abortWait = 2 * time.Second
	stopWait  = 100 * time.Millisecond
)

// failNCCL fails the rail with an error NCCL returned or reported.
func (ic *Interconnect) failNCCL(err error) error { return ic.fail(ic.blame(err)) }

// blame names the rank an NCCL error is about. NCCL says that the rail
// broke, not who broke it; the store learns which process went away (its
// connection drops when the process's sockets close, as NCCL's do), so it
// gets a moment to say; else, with two hosts, the rail's other rank is
// the one.
func (ic *Interconnect) blame(err error) error {
	t := time.NewTimer(blameWait)
	defer t.Stop()
	select {
	case <-ic.m.Done():
		return ic.m.Err()
	case <-t.C:
	}
	if ic.hosts == 2 {
		peer := (1-ic.host)*ic.perHost + ic.m.Rank()%ic.perHost
		return &detcoll.RankError{Rank: peer, Err: detcoll.ErrPeerLost,
			Reason: fmt.Sprintf("the rail of local rank %d broke, seen by rank %d: %v", ic.m.Rank()%ic.perHost, ic.m.Rank(), err)}
	}
	return err
}

// blameWait bounds blame's wait for the store.
const blameWait = 500 * time.Millisecond

// watch turns what the store and NCCL learn of on their own into the
// rail's failure.
func (ic *Interconnect) watch() {
	defer ic.wg.Done()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ic.stop:
			return
		case <-ic.m.Done():
			ic.fail(ic.m.Err())
			return
		case <-tick.C:
			if ic.stopping.Load() {
				return
			}
			for _, c := range []ncclapi.Comm{ic.data, ic.ctrl} {
				if err := c.AsyncError(); err != nil {
					ic.failNCCL(fmt.Errorf("%w: nccl: the rail of local rank %d: %w", detcoll.ErrPeerLost, ic.m.Rank()%ic.perHost, err))
					return
				}
			}
		}
	}
}

// Settled reports whether NCCL has returned from every abort or destroy
// of the rail's communicators, waiting up to d: until it has, its kernels
// may still run, and freeing device memory could wait for them forever.
func (ic *Interconnect) Settled(d time.Duration) bool { return ic.abortDone(d) }

// abortDone reports whether no abort is running, waiting up to d for one.
func (ic *Interconnect) abortDone(d time.Duration) bool {
	p := ic.aborted.Load() // not under freeMu, which fail holds for abortWait
	if p == nil {
		return true
	}
	aborted := *p
	select {
	case <-aborted:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-aborted:
		return true
	case <-t.C:
		return false
	}
}

// free destroys what openRails made, unless an abort did.
func (ic *Interconnect) free() {
	ic.freeMu.Lock()
	defer ic.freeMu.Unlock()
	if ic.freed {
		return
	}
	// Bounded as the abort is: a peer that died just now may leave NCCL's
	// destroy waiting on it.
	ic.release(abortWait, func() {
		ic.onDevice(func() error {
			for _, c := range []ncclapi.Comm{ic.data, ic.ctrl} {
				if c != 0 {
					c.Destroy()
				}
			}
			return nil
		})
	})
}

// release frees the communicators once, by end (an abort or a destroy),
// on a goroutine of its own, waiting for it at most wait: NCCL may not
// return, and then what it may still use is left (abortDone sees aborted
// open), not pulled from under it. freeMu is held.
func (ic *Interconnect) release(wait time.Duration, end func()) {
	ic.freed = true
	aborted := make(chan struct{})
	ic.aborted.Store(&aborted)
	go func() {
		end()
		close(aborted)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-aborted:
	case <-t.C:
	}
}

// Close frees the rail and leaves the store. Comm.Close calls it, after
// the host's communicator closed.
func (ic *Interconnect) Close() error {
	var err error
	ic.closed.Do(func() {
		close(ic.stop)
		ic.wg.Wait()
		ic.free()
		if !ic.abortDone(abortWait) {
			// NCCL may still use the stream and the buffer: leave them,
			// and the context, to the process's end rather than pull
			// them from under it.
			// NCCL's destroy also waits for every CUDA graph that holds
			// a call of the communicator to be destroyed.
			err = fmt.Errorf("nccl: ncclCommAbort or ncclCommDestroy of the rail has not returned (a CUDA graph holding calls across hosts that is not destroyed yet keeps NCCL's destroy waiting: destroy such graphs before Close); the stream, buffers and context are left")
			ctx, cancel := context.WithTimeout(context.Background(), ic.timeout)
			defer cancel()
			ic.m.Leave(ctx, nil)
			return
		}
		ic.onDevice(func() error {
			if ic.stream != 0 {
				ic.stream.Destroy()
			}
			if ic.buf != 0 {
				driver.MemFree(ic.buf)
				driver.MemFreeHost(ic.pinned)
			}
			return nil
		})
		ic.dev.PrimaryCtxRelease()
		driver.Unload()
		ctx, cancel := context.WithTimeout(context.Background(), ic.timeout)
		defer cancel()
		err = ic.m.Leave(ctx, nil)
	})
	return err
}

// hostView is the store as the ranks [first, first+n) of one host see it:
// every rank of the job gathers under the same names (each host's
// communicator runs the same setup), and each host keeps its own ranks'
// values. A failure anywhere in the job is a failure here.
type hostView struct {
	m        Setup
	first, n int
}

func (v hostView) AllGather(ctx context.Context, name string, value []byte) ([][]byte, error) {
	all, err := v.m.AllGather(ctx, "host/"+name, value)
	if err != nil {
		return nil, err
	}
	return all[v.first : v.first+v.n], nil
}

func (v hostView) Fail(reason string)    { v.m.Fail(reason) }
func (v hostView) Done() <-chan struct{} { return v.m.Done() }
func (v hostView) Err() error            { return v.m.Err() }
