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
// peers map over CUDA IPC. An all-reduce whose input and output lie in
// windows takes proto.Registered: each rank reads its part of every
// rank's input where it lies and writes the sums into every rank's
// output, with no staging (kernels/registered.h).
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
	table  driver.DevicePtr     // maxWindows rows of world addresses, allocated at the first window
	opened [][]driver.DevicePtr // by row: what IPCOpenMemHandle returned, to close; nil where free
	used   []bool               // by row
	calls  int                  // Register and Deregister calls so far: they name the rendezvous keys
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

// windowMsg is what each rank tells the others of a window: whether it
// could export it, its IPC handle, the window's offset in its allocation,
// and the row it takes.
const windowMsgLen = 1 + 64 + 8 + 8

// Register makes [addr, addr+size) of this rank's device memory a window
// of the communicator and returns its row. It is collective: every rank
// registers its own window, in the same order (sizes may differ). It
// fails on every rank alike where a rank's memory cannot be shared over
// CUDA IPC (memory of cuMemCreate, say: errors.Is ErrUnavailable), and
// with ErrInvalid where the ranks' windows take different rows.
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
	key := fmt.Sprintf("cuda/window/%d", ws.calls)
	if err := c.current(); err != nil {
		runtime.UnlockOSThread()
		return 0, err
	}
	defer runtime.UnlockOSThread()
	mapped := make([]driver.DevicePtr, c.world)
	mapped[c.rank] = driver.DevicePtr(addr)
	var opened []driver.DevicePtr
	if c.world > 1 {
		var err error
		if opened, err = c.mapWindow(ctx, key, addr, size, row, mapped); err != nil {
			return 0, err
		}
	}
	if ws.table == 0 {
		t, err := driver.MemAlloc(maxWindows * c.world * 8)
		if err != nil {
			closeAll(opened)
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
		closeAll(opened)
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

// mapWindow exchanges this rank's window with its peers and opens
// theirs into mapped. A second exchange tells every rank that every rank
// opened every window, so that all keep it or none does.
func (c *Comm) mapWindow(ctx context.Context, key string, addr uint64, size, row int, mapped []driver.DevicePtr) ([]driver.DevicePtr, error) {
	msg := make([]byte, windowMsgLen)
	binary.LittleEndian.PutUint64(msg[73:], uint64(row))
	why := ""
	if base0, _, err := driver.PointerRange(driver.DevicePtr(addr)); err != nil {
		why = err.Error()
	} else if h, err := driver.IPCGetMemHandle(base0); err != nil {
		why = err.Error()
	} else {
		msg[0] = 1
		copy(msg[1:65], h[:])
		binary.LittleEndian.PutUint64(msg[65:], addr-uint64(base0))
	}
	all, err := c.rdv.AllGather(ctx, key, append(msg, why...))
	if err != nil {
		return nil, fmt.Errorf("register: exchange the windows: %w", err)
	}
	for p, v := range all {
		if len(v) < windowMsgLen {
			return nil, base.Invalidf("register: rank %d sent %d bytes", p, len(v))
		}
		if r := int(binary.LittleEndian.Uint64(v[73:])); r != row {
			return nil, base.Invalidf("register: rank %d's window takes row %d, rank %d's row %d: every rank must register and deregister its windows in the same order", p, r, c.rank, row)
		}
	}
	for p, v := range all {
		if v[0] != 1 {
			return nil, fmt.Errorf("%w: register: rank %d cannot share its window over CUDA IPC: %s", base.ErrUnavailable, p, v[windowMsgLen:])
		}
	}
	var opened []driver.DevicePtr
	var openErr error
	for p, v := range all {
		if p == c.rank {
			continue
		}
		var h driver.IPCMemHandle
		copy(h[:], v[1:65])
		ptr, err := driver.IPCOpenMemHandle(h)
		if err != nil {
			openErr = fmt.Errorf("map rank %d's window: %w", p, err)
			break
		}
		opened = append(opened, ptr)
		mapped[p] = ptr + driver.DevicePtr(binary.LittleEndian.Uint64(v[65:73]))
	}
	ok := []byte{1}
	if openErr != nil {
		ok = append([]byte{0}, openErr.Error()...)
	}
	all, err = c.rdv.AllGather(ctx, key+"/mapped", ok)
	if err == nil {
		for p, v := range all {
			if len(v) == 0 || v[0] != 1 {
				err = fmt.Errorf("%w: register: rank %d could not map its peers' windows: %s", base.ErrUnavailable, p, v[min(1, len(v)):])
				break
			}
		}
	}
	if err != nil {
		closeAll(opened)
		return nil, err
	}
	return opened, nil
}

// Deregister gives back the window of row. It is collective, in the
// order of the registrations' rows as Register requires, and no call
// that uses the window may still be queued or running (as for NCCL's
// ncclCommWindowDeregister): the peers' mappings close.
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
		closeAll(ws.opened[row])
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
		closeAll(o)
	}
	if c.wins.table != 0 {
		driver.MemFree(c.wins.table)
	}
	c.wins = windows{}
	c.plan.windows = nil
}

func closeAll(ptrs []driver.DevicePtr) {
	for _, p := range ptrs {
		driver.IPCCloseMemHandle(p)
	}
}
