package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/base"
)

// Windows: device memory that every rank registers with the communicator
// (Register, collectively, like NCCL's ncclCommWindowRegister) and its
// peers map: cuMemAlloc memory over CUDA IPC, cuMemCreate memory (NCCL's
// ncclMemAlloc) as a file descriptor passed over a Unix socket
// (winshare.go). An all-reduce or a reduce-scatter whose input and
// output lie in windows takes proto.Registered: each rank reads its part
// of every rank's input where it lies and writes the sums into every
// rank's output (a reduce-scatter: into its own), with no staging
// (kernels/registered.h). An all-gather does not (proto.Registered says
// why).
//
// The kernels find a peer's buffer in two steps: the peer publishes, with
// its signature, its input and output as regWords (the window's row and
// the offset in it, offReg); this rank's table (Args.Wins, one row per
// window, one column per rank) holds each rank's window as mapped here.
// So ranks may place their buffers at different offsets of their windows,
// and windows may differ in size; every rank registers its windows in the
// same order, which gives a window the same row everywhere.

const (
	// regOffBits: a regWord holds the window's row + 1 above these bits
	// and the buffer's offset in the window below them (windows under
	// 1 TiB).
	regOffBits = 40
	// maxWindows is the rows of the table: the windows one communicator
	// holds at once.
	maxWindows = 256
)

// regWord is what the kernels read of a registered buffer: its window's
// row and its offset there (0 is no buffer).
func regWord(row int, off uint64) uint64 { return uint64(row+1)<<regOffBits | off }

// regWindow is a window as the planner sees it: this rank's memory and
// its row.
type regWindow struct {
	addr uint64
	size int
	row  int
}

// regOf returns b's regWord where b lies whole in one of ws and starts
// 16-byte aligned (the kernels' vectors read the peers' buffers in place).
func regOf(ws []regWindow, b base.DeviceBuf) (uint64, bool) {
	if b.Addr%16 != 0 {
		return 0, false
	}
	for _, w := range ws {
		if b.Addr >= w.addr && b.Addr+uint64(b.Len) <= w.addr+uint64(w.size) {
			return regWord(w.row, b.Addr-w.addr), true
		}
	}
	return 0, false
}

// windows is a communicator's registered memory. Guarded by Comm.mu.
type windows struct {
	table  driver.DevicePtr // maxWindows rows of world addresses, allocated at the first window
	opened [][]peerMap      // by row: the peers' allocations as mapped here, to undo; nil where free
	used   []bool           // by row
	// calls counts Register and Deregister calls so far: they name the
	// rendezvous keys and the sockets of registrations.
	calls int
}

// freeRow is the lowest row no window holds, or -1.
func (ws *windows) freeRow() int {
	for r := range maxWindows {
		if r >= len(ws.used) || !ws.used[r] {
			return r
		}
	}
	return -1
}

// Register makes [addr, addr+size) of this rank's device memory a window
// of the communicator and returns its row. It is collective: every rank
// registers its own window, in the same order (sizes may differ). The
// window must lie in one allocation: of cuMemAlloc, shared over CUDA IPC,
// or of cuMemCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR among
// its handle types (as ncclMemAlloc makes it), shared as a file
// descriptor over a Unix socket, which needs every rank on this host. It
// fails on every rank alike where a rank's window cannot be shared or
// mapped (errors.Is ErrUnavailable, naming the rank and why), and with
// ErrInvalid where the ranks' windows take different rows. Every wait on
// a peer is bounded by ctx and the communicator's timeout.
func (c *Comm) Register(ctx context.Context, addr uint64, size int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return 0, err
	}
	if size <= 0 || size >= 1<<regOffBits {
		return 0, base.Invalidf("register %d bytes: a window holds 1 byte to 1 TiB", size)
	}
	res := c.Reserved()
	if addr < res.Addr+uint64(res.Len) && res.Addr < addr+uint64(size) {
		return 0, base.Invalidf("register %#x: it overlaps the communicator's own buffer", addr)
	}
	for _, w := range c.plan.windows {
		if addr < w.addr+uint64(w.size) && w.addr < addr+uint64(size) {
			return 0, base.Invalidf("register %#x: it overlaps window %d (%#x, %d bytes)", addr, w.row, w.addr, w.size)
		}
	}
	ws := &c.wins
	row := ws.freeRow()
	if row < 0 {
		return 0, base.Invalidf("register: %d windows already, the most a communicator holds", maxWindows)
	}
	ws.calls++
	if err := c.current(); err != nil {
		runtime.UnlockOSThread()
		return 0, err
	}
	defer runtime.UnlockOSThread()
	mapped := make([]driver.DevicePtr, c.world)
	mapped[c.rank] = driver.DevicePtr(addr)
	var opened []peerMap
	if c.world > 1 {
		var err error
		if opened, err = c.mapWindow(ctx, ws.calls, addr, size, row, mapped); err != nil {
			return 0, err
		}
	}
	if ws.table == 0 {
		t, err := driver.MemAlloc(maxWindows * c.world * 8)
		if err != nil {
			unmapAll(opened)
			return 0, fmt.Errorf("register: the windows' table: %w", err)
		}
		ws.table = t
	}
	rowBytes := make([]byte, 8*c.world)
	for p, m := range mapped {
		binary.LittleEndian.PutUint64(rowBytes[8*p:], uint64(m))
	}
	// No kernel reads a free row: queued calls name the rows they use.
	if err := driver.MemcpyHtoD(ws.table+driver.DevicePtr(row*c.world*8), rowBytes); err != nil {
		unmapAll(opened)
		return 0, fmt.Errorf("register: write row %d of the windows' table: %w", row, err)
	}
	for len(ws.used) <= row {
		ws.used = append(ws.used, false)
		ws.opened = append(ws.opened, nil)
	}
	ws.used[row], ws.opened[row] = true, opened
	c.plan.windows = append(c.plan.windows, regWindow{addr: addr, size: size, row: row})
	return row, nil
}

// mapWindow exchanges this rank's window with its peers, in the
// registration call, and maps theirs into mapped. It returns the
// mappings, to undo at Deregister. A second exchange tells every rank
// that every rank mapped every window, so that all keep it or none does;
// only then does this rank stop serving its descriptor, if it has one.
func (c *Comm) mapWindow(ctx context.Context, call int, addr uint64, size, row int, mapped []driver.DevicePtr) ([]peerMap, error) {
	key := fmt.Sprintf("cuda/window/%d", call)
	msg, fd := c.exportWindow(addr, size, row)
	if fd >= 0 {
		// Deferred first, so closed last: after the server stopped.
		defer closeFD(fd)
		// The peers ask once they have the message: listen before it goes.
		srv, err := listenFD(c.windowSocket(call, c.rank), fd, msg.token, c.world-1, c.timeout)
		if err != nil {
			msg = windowMsg{row: row, why: fmt.Sprintf("serve the descriptor of its cuMemCreate allocation: %v", err)}
		} else {
			defer srv.Close()
		}
	}
	all, err := c.rdv.AllGather(ctx, key, msg.encode())
	if err != nil {
		return nil, fmt.Errorf("register: exchange the windows: %w", err)
	}
	msgs := make([]windowMsg, len(all))
	for p, v := range all {
		m, err := decodeWindowMsg(v)
		if err != nil {
			return nil, base.Invalidf("register: rank %d sent %v", p, err)
		}
		if m.row != row {
			return nil, base.Invalidf("register: rank %d's window takes row %d, rank %d's row %d: every rank must register and deregister its windows in the same order", p, m.row, c.rank, row)
		}
		msgs[p] = m
	}
	for p, m := range msgs {
		if m.kind == windowNone {
			return nil, fmt.Errorf("%w: register: rank %d cannot share its window: %s", base.ErrUnavailable, p, m.why)
		}
	}
	var opened []peerMap
	var openErr error
	for p, m := range msgs {
		if p == c.rank {
			continue
		}
		pm, ptr, err := c.importWindow(ctx, call, p, m)
		if err != nil {
			openErr = fmt.Errorf("map rank %d's window: %w", p, err)
			break
		}
		opened = append(opened, pm)
		mapped[p] = ptr
	}
	ok := []byte{1}
	if openErr != nil {
		ok = append([]byte{0}, openErr.Error()...)
	}
	all, err = c.rdv.AllGather(ctx, key+"/mapped", ok)
	if err == nil {
		for p, v := range all {
			if len(v) == 0 || v[0] != 1 {
				if p == c.rank {
					// Its own error, wrapped: a timeout still matches
					// context.DeadlineExceeded.
					err = fmt.Errorf("%w: register: rank %d could not map its peers' windows: %w", base.ErrUnavailable, p, openErr)
				} else {
					err = fmt.Errorf("%w: register: rank %d could not map its peers' windows: %s", base.ErrUnavailable, p, v[min(1, len(v)):])
				}
				break
			}
		}
	}
	if err != nil {
		unmapAll(opened)
		return nil, err
	}
	return opened, nil
}

// Deregister gives back the window of row. It is collective, in the
// order of the registrations' rows as Register requires, and no call
// that uses the window may still be queued or running (as for NCCL's
// ncclCommWindowDeregister): this rank's mappings of the peers' windows
// go (closed, or unmapped and their addresses freed).
func (c *Comm) Deregister(ctx context.Context, row int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := &c.wins
	if row < 0 || row >= len(ws.used) || !ws.used[row] {
		return base.Invalidf("deregister: no window %d", row)
	}
	ws.calls++
	var err error
	if c.world > 1 && c.usable() == nil {
		var all [][]byte
		all, err = c.rdv.AllGather(ctx, fmt.Sprintf("cuda/window/%d", ws.calls), binary.LittleEndian.AppendUint64(nil, uint64(row)))
		for p, v := range all {
			if len(v) != 8 || int(binary.LittleEndian.Uint64(v)) != row {
				err = base.Invalidf("deregister: rank %d gives back another window than rank %d's %d", p, c.rank, row)
				break
			}
		}
	}
	// The window goes here whatever the peers said: it must not outlive
	// its memory, which the caller frees next.
	if cerr := c.current(); cerr != nil {
		err = errors.Join(err, cerr)
	} else {
		unmapAll(ws.opened[row])
	}
	runtime.UnlockOSThread()
	ws.used[row], ws.opened[row] = false, nil
	for i, w := range c.plan.windows {
		if w.row == row {
			c.plan.windows = append(c.plan.windows[:i:i], c.plan.windows[i+1:]...)
			break
		}
	}
	return err
}

// releaseWindows closes every window's mappings and frees the table
// (Close).
func (c *Comm) releaseWindows() {
	for _, o := range c.wins.opened {
		unmapAll(o)
	}
	if c.wins.table != 0 {
		driver.MemFree(c.wins.table)
	}
	c.wins = windows{}
	c.plan.windows = nil
}
