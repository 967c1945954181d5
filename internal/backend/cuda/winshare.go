package cuda

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/base"
)

// How a window's memory reaches the peers. Memory of cuMemAlloc (what
// PyTorch's caching allocator hands out) shares over CUDA IPC: a 64-byte
// handle in the rendezvous message, which a peer opens. Memory of
// cuMemCreate (NCCL's ncclMemAlloc, SGLang's symmetric memory) does not;
// an allocation created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
// among its handle types exports as a file descriptor, which the exporter
// hands each peer over a Unix socket (fdpass_linux.go), and the peer
// imports and maps at addresses of its own. Either way a peer maps the
// whole allocation, and the message says where the window lies in it.

// windowKind says how a rank shares its window.
type windowKind byte

const (
	windowNone windowKind = iota // it cannot: the message says why
	windowIPC                    // a CUDA IPC handle
	windowFD                     // a cuMemCreate allocation, its descriptor served on a socket
)

// windowMsg is what each rank tells the others of its window.
type windowMsg struct {
	kind windowKind
	row  int    // the row the window takes
	off  uint64 // the window's offset in its allocation
	ipc  driver.IPCMemHandle
	// windowFD: the allocation's size, the alignment to map it at, and the
	// token a peer shows to be given its descriptor.
	size, align uint64
	token       [fdTokenLen]byte
	why         string // windowNone: why not
}

// windowMsgLen is a message's fixed part: kind, IPC handle, offset, row,
// size, alignment, token; then why.
const windowMsgLen = 1 + 64 + 8 + 8 + 8 + 8 + fdTokenLen

func (m windowMsg) encode() []byte {
	b := make([]byte, windowMsgLen, windowMsgLen+len(m.why))
	b[0] = byte(m.kind)
	copy(b[1:65], m.ipc[:])
	binary.LittleEndian.PutUint64(b[65:], m.off)
	binary.LittleEndian.PutUint64(b[73:], uint64(m.row))
	binary.LittleEndian.PutUint64(b[81:], m.size)
	binary.LittleEndian.PutUint64(b[89:], m.align)
	copy(b[97:windowMsgLen], m.token[:])
	return append(b, m.why...)
}

func decodeWindowMsg(b []byte) (windowMsg, error) {
	if len(b) < windowMsgLen {
		return windowMsg{}, fmt.Errorf("a window message of %d bytes, want at least %d", len(b), windowMsgLen)
	}
	m := windowMsg{
		kind:  windowKind(b[0]),
		off:   binary.LittleEndian.Uint64(b[65:]),
		size:  binary.LittleEndian.Uint64(b[81:]),
		align: binary.LittleEndian.Uint64(b[89:]),
		why:   string(b[windowMsgLen:]),
	}
	copy(m.ipc[:], b[1:65])
	copy(m.token[:], b[97:windowMsgLen])
	row := binary.LittleEndian.Uint64(b[73:])
	switch {
	case m.kind > windowFD:
		return windowMsg{}, fmt.Errorf("a window of kind %d", m.kind)
	case row >= maxWindows:
		return windowMsg{}, fmt.Errorf("a window in row %d", row)
	case m.kind == windowFD && (m.size == 0 || m.size > math.MaxInt || m.off >= m.size || m.align > m.size):
		return windowMsg{}, fmt.Errorf("a window at %d of an allocation of %d bytes aligned to %d", m.off, m.size, m.align)
	}
	m.row = int(row)
	return m, nil
}

// peerMap is a peer's allocation as mapped here, and how to undo it: an
// IPC mapping (size 0) is closed, imported cuMemCreate memory unmapped
// and its addresses freed.
type peerMap struct {
	ptr  driver.DevicePtr
	size int
}

func (m peerMap) unmap() error {
	if m.size == 0 {
		return driver.IPCCloseMemHandle(m.ptr)
	}
	return errors.Join(driver.MemUnmap(m.ptr, m.size), driver.MemAddressFree(m.ptr, m.size))
}

// unmapAll undoes ms, on the thread with the context current.
func unmapAll(ms []peerMap) {
	for _, m := range ms {
		m.unmap()
	}
}

// windowSocket names rank's socket for the registration call: abstract,
// and unique to the communicator (rank 0's process id and the random
// seq0 it drew, which every rank holds), so that communicators and jobs
// on one host never meet.
func (c *Comm) windowSocket(call, rank int) string {
	return fmt.Sprintf("@detcoll/%d-%x/window/%d/%d", c.pids[0], c.seq0, call, rank)
}

// exportWindow returns the message by which the peers map [addr,
// addr+size) in row, and for cuMemCreate memory its allocation's
// descriptor, which the caller serves and closes (else -1). Where the
// window cannot be shared the message says why.
func (c *Comm) exportWindow(addr uint64, size, row int) (windowMsg, int) {
	end := addr + uint64(size)
	// cuMemCreate memory is what cuMemRetainAllocationHandle takes; should
	// it take other memory too, CUDA IPC still gets its chance.
	h, err := driver.MemRetainAllocationHandle(driver.DevicePtr(addr))
	cuMem := err == nil
	var fdErr error
	if cuMem {
		m, fd, err := c.exportFD(h, addr, end)
		if err == nil {
			m.row = row
			return m, fd
		}
		fdErr = err
	}
	m, err := exportIPC(addr, end)
	switch {
	case err == nil:
		m.row = row
		return m, -1
	case cuMem:
		return windowMsg{row: row, why: fdErr.Error()}, -1
	}
	return windowMsg{row: row, why: fmt.Sprintf("it is no cuMemCreate memory, and %v", err)}, -1
}

// exportIPC exports the cuMemAlloc allocation that holds [addr, end) as
// a CUDA IPC handle.
func exportIPC(addr, end uint64) (windowMsg, error) {
	start, n, err := driver.PointerRange(driver.DevicePtr(addr))
	if err != nil {
		return windowMsg{}, err
	}
	if lim := uint64(start) + uint64(n); end > lim {
		return windowMsg{}, fmt.Errorf("the window [%#x, %#x) runs past its allocation [%v, %#x): register one window per allocation", addr, end, start, lim)
	}
	ipc, err := driver.IPCGetMemHandle(start)
	if err != nil {
		return windowMsg{}, fmt.Errorf("it does not share over CUDA IPC: %w", err)
	}
	return windowMsg{kind: windowIPC, off: addr - uint64(start), ipc: ipc}, nil
}

// exportFD exports the cuMemCreate allocation of h, which holds [addr,
// end), as a descriptor, and releases h.
func (c *Comm) exportFD(h driver.MemHandle, addr, end uint64) (windowMsg, int, error) {
	defer driver.MemRelease(h) // the descriptor holds the memory from here
	start, n, err := driver.MemGetAddressRange(driver.DevicePtr(addr))
	if err != nil {
		return windowMsg{}, -1, fmt.Errorf("the range of its cuMemCreate allocation: %w", err)
	}
	if lim := uint64(start) + uint64(n); end > lim {
		return windowMsg{}, -1, fmt.Errorf("the window [%#x, %#x) runs past its cuMemCreate allocation [%v, %#x): register one window per allocation", addr, end, start, lim)
	}
	fd, err := driver.MemExportFD(h)
	if err != nil {
		return windowMsg{}, -1, fmt.Errorf("its cuMemCreate allocation does not export as a POSIX file descriptor (requestedHandleTypes without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR?): %w", err)
	}
	closeOnExec(fd)
	// A peer maps the allocation at addresses aligned to this device's
	// granularity; where the driver does not say, at its default.
	align, err := driver.MemAllocationGranularity(c.dev, driver.MemHandlePosixFD, driver.GranularityMinimum)
	if err != nil {
		align = 0
	}
	m := windowMsg{kind: windowFD, off: addr - uint64(start), size: uint64(n), align: uint64(align)}
	rand.Read(m.token[:])
	return m, fd, nil
}

// importWindow maps peer p's allocation, as its message m of the
// registration call says, and returns the mapping and the window's
// address in it.
func (c *Comm) importWindow(ctx context.Context, call, p int, m windowMsg) (peerMap, driver.DevicePtr, error) {
	switch m.kind {
	case windowIPC:
		ptr, err := driver.IPCOpenMemHandle(m.ipc)
		if err != nil {
			return peerMap{}, 0, err
		}
		return peerMap{ptr: ptr}, ptr + driver.DevicePtr(m.off), nil
	case windowFD:
		fctx, cancel := c.peerContext(ctx)
		fd, err := fetchFD(fctx, c.windowSocket(call, p), m.token, c.rank)
		cancel()
		if err != nil {
			return peerMap{}, 0, fmt.Errorf("fetch the descriptor of its cuMemCreate allocation: %w", err)
		}
		h, err := driver.MemImportFD(fd)
		closeFD(fd)
		if err != nil {
			return peerMap{}, 0, err
		}
		defer driver.MemRelease(h) // the mapping holds the memory
		size := int(m.size)
		ptr, err := driver.MemMapNew(h, size, int(m.align), c.dev)
		if err != nil {
			return peerMap{}, 0, err
		}
		return peerMap{ptr: ptr, size: size}, ptr + driver.DevicePtr(m.off), nil
	}
	return peerMap{}, 0, base.Invalidf("a window of kind %d", m.kind)
}

// peerContext bounds a wait on one peer by the communicator's timeout
// too.
func (c *Comm) peerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout > 0 {
		return context.WithTimeout(ctx, c.timeout)
	}
	return context.WithCancel(ctx)
}
