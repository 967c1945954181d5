package cuda

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"time"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// stopWait bounds how long Close on a failed communicator waits for its
// live peers to confirm that their kernels have stopped, before it frees
// the buffer they map.
const stopWait = 2 * time.Second

// Close ends the communicator. When it is healthy, Close is collective:
// it waits for this rank's kernels to finish, then for every peer to get
// that far, so that no kernel anywhere still reads this rank's buffer;
// it closes its mappings of the peers' buffers, and waits for every peer
// to have closed its mappings too before it frees its own buffer. On a
// failed communicator (or when a peer fails during Close) it raises the
// abort word (so that any spinning kernel exits), waits for its kernels,
// tells every peer that they have stopped, and waits, at most stopWait
// (and until ctx is done), until every live peer has told it the same,
// before it frees anything: a peer that never calls Close leaves its
// buffer mapped here until the bound. Close releases everything, whatever
// happened; if the device stays busy past settleWait after the abort (with
// work that need not be this communicator's), Close returns saying so and
// frees the memory when the device goes idle, rather than wait forever.
// It is idempotent.
//
// Close waits for the whole device (cuCtxSynchronize), not one stream: it
// does not know every stream the calls went to. Do not call it while
// another thread captures a graph in global mode.
func (c *Comm) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if err := c.current(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer runtime.UnlockOSThread()
	var err error
	if c.Err() == nil {
		if err = driver.CtxSynchronize(); err != nil {
			c.poison(fmt.Errorf("cuda: close: %w", err), true)
		} else if err = c.Err(); err == nil && c.world > 1 {
			if err = c.rdv.Barrier(ctx, "cuda/close"); err != nil {
				err = fmt.Errorf("close: wait for peers: %w", err)
				c.poison(err, true) // peers must stop their kernels too
			}
		}
	}
	failed := err != nil || c.Err() != nil
	var idle <-chan struct{}
	if failed {
		c.raiseAbort(c.Err())
		// This communicator's kernels exit at the abort word, but the
		// device may stay busy with other work: NCCL's, across hosts, when
		// its abort does not return (results/gpu/levers-2026-12-02, runs
		// 16 to 19), or the caller's. Freeing now could wait forever.
		if idle = c.idleWithin(settleWait); idle == nil {
			c.awaitStopped(ctx)
		}
	}
	if c.stopMonitor != nil {
		close(c.stopMonitor)
		<-c.monitorDone
		c.stopMonitor = nil
	}
	if idle != nil {
		go func() {
			<-idle // nothing can wait on this memory any more
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.current() == nil {
				c.unmapPeers()
				c.release()
			}
			runtime.UnlockOSThread()
		}()
		return errors.Join(err, fmt.Errorf("cuda: close: the device was still busy %v after the abort; this communicator's memory is freed when it goes idle", settleWait))
	}
	c.unmapPeers()
	if !failed && c.world > 1 {
		// No peer's kernel touches this buffer any more (the barrier
		// above), but a peer may not have closed its mapping of it yet.
		if e := c.rdv.Barrier(ctx, "cuda/unmapped"); e != nil {
			err = fmt.Errorf("close: wait for peers to unmap this rank's buffer: %w", e)
		}
	}
	c.release()
	return err
}

// settleWait bounds Close's wait, on a failed communicator, for the
// device to finish its work once the abort word is up.
const settleWait = 2 * time.Second

// idleWithin waits up to d for the device to finish all its work. It
// returns nil if it did, else a channel closed when it does. The wait
// runs on a thread of its own, which a device that never finishes keeps.
// A context that cannot be made current runs nothing more: that counts
// as idle.
func (c *Comm) idleWithin(d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer runtime.UnlockOSThread()
		if c.current() == nil {
			driver.CtxSynchronize()
		}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return done
	}
}

// awaitStopped tells every peer that this rank's kernels have stopped (a
// word in the peer's control block, written through the mapping) and
// waits until every peer whose process is alive has written the same
// here, stopWait has passed, or ctx is done. A dead peer's kernels died
// with it. The caller has waited for this rank's kernels.
func (c *Comm) awaitStopped(ctx context.Context) {
	if c.world == 1 || len(c.peers) == 0 {
		return
	}
	token := make([]byte, 8)
	binary.LittleEndian.PutUint64(token, c.seq0)
	for p, ptr := range c.peers {
		if p != c.rank && alive(c.pids[p]) {
			if err := driver.MemcpyHtoD(ptr+driver.DevicePtr(offStopped+8*c.rank), token); err != nil {
				c.log.Warn("close: cannot tell a peer that this rank stopped", "peer", p, "err", err)
			}
		}
	}
	deadline := time.Now().Add(stopWait)
	words := make([]byte, 8*c.world)
	for {
		if err := driver.MemcpyDtoH(words, c.buf+offStopped); err != nil {
			c.log.Warn("close: cannot read whether peers stopped", "err", err)
			return
		}
		var waiting []int
		for p := range c.world {
			if p != c.rank && binary.LittleEndian.Uint64(words[8*p:]) != c.seq0 && alive(c.pids[p]) {
				waiting = append(waiting, p)
			}
		}
		if len(waiting) == 0 {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.log.Warn("close: freeing the buffer while peers may still run kernels on it", "ranks", waiting)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// alive reports whether process pid may still run: false only when it is
// known to have exited (no /proc entry, or a zombie, whose GPU contexts
// are gone).
func alive(pid int) bool {
	if pid <= 0 {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	// The state follows the ")" that ends the command name.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// unmapPeers closes this rank's mappings of the peers' buffers.
func (c *Comm) unmapPeers() {
	for _, ptr := range c.opened {
		driver.IPCCloseMemHandle(ptr)
	}
	c.opened, c.peers = nil, nil
}

// release frees whatever Open set up, on the locked thread with the
// context current (or none yet).
func (c *Comm) release() {
	if c.plan.profile && c.buf != 0 {
		c.printProfile()
	}
	c.share.leave()
	c.releaseWindows()
	c.unmapPeers()
	if c.buf != 0 {
		driver.MemFree(c.buf)
		c.buf = 0
	}
	c.hostMu.Lock() // no Err reads the records while they go
	if c.host.Len() != 0 {
		driver.MemFreeHost(c.host)
		c.host = driver.HostMem{}
	}
	if r := c.rail.Swap(nil); r != nil {
		r.free()
	}
	c.hostMu.Unlock()
	if c.stream != 0 {
		c.stream.Destroy()
		c.stream = 0
	}
	if c.mod != 0 {
		c.mod.Unload()
		c.mod = 0
	}
	for _, t := range c.sums {
		t.mod.Unload()
	}
	c.sums = nil
	if c.fence != 0 {
		c.fence.Destroy()
		c.fence = 0
	}
	if c.ctx != 0 {
		c.dev.PrimaryCtxRelease()
		c.ctx = 0
	}
	driver.Unload()
}
