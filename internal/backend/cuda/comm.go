package cuda

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/detcoll/detcoll/internal/binding/driver"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/settings"
)

// Config is what the public API passes to Open, with defaults applied.
type Config struct {
	Rank, World int
	// Device is the CUDA device ordinal (after CUDA_VISIBLE_DEVICES).
	Device int
	// Capacity is the largest call's input in bytes. Each rank allocates
	// up to twice that of device memory (pushStaging), plus the LL area.
	Capacity int64
	// Timeout bounds every wait for peers, in the kernels too.
	Timeout time.Duration
	// Rendezvous reaches the other ranks; nil when World is 1.
	Rendezvous base.Rendezvous
	Logger     *slog.Logger
}

// Comm is a communicator of the cuda backend. Its methods are safe for
// concurrent use; calls are serialised, and queue their kernels in the
// order they are made.
type Comm struct {
	rank, world, device int
	capacity            int64
	timeout             time.Duration
	rdv                 base.Rendezvous
	log                 *slog.Logger
	plan                planner

	// Set up by Open, released by Close.
	dev     driver.Device
	ctx     driver.Context
	mod     driver.Module
	fns     [numKernels]driver.Function
	buf     driver.DevicePtr // this rank's buffer: control block, staging, LL area
	bufLen  int
	llOff   int                // offset of the LL area in every rank's buffer
	peers   []driver.DevicePtr // every rank's buffer as mapped here (peers[rank] == buf)
	opened  []driver.DevicePtr // what IPCOpenMemHandle returned, to close
	pids    []int              // every rank's process id, to tell a dead peer in Close
	host    driver.HostMem     // abort word and error record; hostMu guards its freeing
	hostDev driver.DevicePtr   // host's device address
	stream  driver.Stream      // the communicator's own stream (non-blocking): Barrier's before any call
	busID   string             // the GPU's PCI bus id: ranks with the same one share the GPU (share.go)
	// share is this communicator's ranks on each GPU it spans, counted at
	// Open (share.go); Close gives back its place in the process's count.
	share sharing
	// seq0 is the seq of the communicator's first call, drawn at random by
	// rank 0 (collective.cu: sequence values); error reports count calls
	// from it (call = seq - seq0 + 1).
	seq0 uint64

	// cause is the first failure; once set every call returns it. It is
	// written by a call, Err, Abort or the monitor.
	cause atomic.Pointer[error]
	told  atomic.Bool // the peers were told of a failure found here
	// recorded: refresh has taken the error record (written once, by the
	// first failing kernel) into cause.
	recorded atomic.Bool

	stopMonitor chan struct{} // closed by Close to end the monitor goroutine
	monitorDone chan struct{} // closed when the monitor goroutine has exited

	mu     sync.Mutex      // serialises calls; guards the fields below
	stage  base.StagedCall // a StageDevice awaiting its AllReduceStagedDevice
	closed bool
	last   driver.Stream // the stream of the last call queued (stream before any)
	// args is the launches' parameter, reused, in an allocation of its
	// own: cgo refuses a pointer into memory that holds Go pointers, and
	// a fresh one per call would escape to the heap.
	args  *kernelArgs
	sums  map[int]*treeSums // T over the hosts' sums (treesum.go), by leaves, once a call across hosts needs it
	wins  windows           // registered memory (window.go)
	fence driver.Event      // the end of the last call across hosts (Fence)
	// rail is the signature check of calls across hosts (railsig.go), set
	// once by PrepareRail; the monitor reads it without c.mu.
	rail atomic.Pointer[railSigs]
	// hostMu is held to read the host-mapped records (host, rail's) from
	// any goroutine (Err, the monitor), and to free them (release).
	hostMu sync.RWMutex
}

// Open sets up this rank's GPU and maps every peer's buffer. It is
// collective: every rank calls it with the same capacity, and it returns
// when every rank has mapped every buffer, or with an error on every rank.
// Without a CUDA driver or device it returns an error matching
// base.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Comm, error) {
	if cfg.World > maxWorld {
		return nil, base.Invalidf("cuda: %d ranks, at most %d", cfg.World, maxWorld)
	}
	if err := driver.Load(); err != nil {
		return nil, fmt.Errorf("%w: cuda: no CUDA driver: %w", base.ErrUnavailable, err)
	}
	c := &Comm{
		rank: cfg.Rank, world: cfg.World, device: cfg.Device, capacity: cfg.Capacity,
		timeout: cfg.Timeout, rdv: cfg.Rendezvous, log: cfg.Logger, args: new(kernelArgs),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if c.plan, err = newPlanner(cfg.Rank, cfg.World); err != nil {
		driver.Unload()
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ok := false
	defer func() {
		if !ok {
			c.release()
		}
	}()
	if err := c.setupDevice(); err != nil {
		return nil, err
	}
	if err := c.setupBuffers(); err != nil {
		return nil, err
	}
	if err := c.mapPeers(ctx); err != nil {
		return nil, err
	}
	if err := c.initWords(); err != nil {
		return nil, err
	}
	// The copies above may still be in flight (pageable memory), and
	// kernels on other streams do not wait for them.
	if err := driver.CtxSynchronize(); err != nil {
		return nil, err
	}
	if n, crowded := c.share.crowded(); crowded {
		c.log.Warn("cuda: this process's communicators put more kernels on one GPU than fit there at once: calls that overlap may time out",
			"gpu", c.share.busID, "kernels", n, "fit", c.share.fit, "ranks of this communicator", c.share.ranks)
	}
	if c.world > 1 {
		if err := c.rdv.Barrier(ctx, "cuda/mapped"); err != nil {
			return nil, fmt.Errorf("wait for peers to map their buffers: %w", err)
		}
		c.stopMonitor = make(chan struct{})
		c.monitorDone = make(chan struct{})
		go c.monitor()
	}
	ok = true
	return c, nil
}

// setupDevice retains the device's primary context, makes it current and
// loads the kernels.
func (c *Comm) setupDevice() error {
	n, err := driver.DeviceCount()
	if err != nil {
		return fmt.Errorf("%w: cuda: %w", base.ErrUnavailable, err)
	}
	if c.device >= n && n > 0 && settings.Get(envShareDevices) == "1" {
		c.device %= n
	}
	if c.device < 0 || c.device >= n {
		return fmt.Errorf("%w: cuda: device %d of rank %d: %d devices visible", base.ErrUnavailable, c.device, c.rank, n)
	}
	if c.dev, err = driver.DeviceGet(c.device); err != nil {
		return err
	}
	ctx, err := c.dev.PrimaryCtxRetain()
	if err != nil {
		return err
	}
	c.ctx = ctx
	if err := c.ctx.SetCurrent(); err != nil {
		return err
	}
	sms, err := c.dev.Attribute(driver.AttrMultiprocessorCount)
	if err != nil {
		return err
	}
	if c.mod, c.fns, err = loadKernels(c.dev, c.world, c.plan.llMax, c.plan.profile); err != nil {
		return err
	}
	resident := 0 // blocks of every kernel that fit on the GPU at once
	for k, fn := range c.fns {
		n, err := fn.MaxActiveBlocksPerSM(c.plan.block, 0)
		if err != nil {
			return fmt.Errorf("occupancy of %s: %w", kernelNames[k], err)
		}
		if k == 0 || n*sms < resident {
			resident = n * sms
		}
	}
	c.plan.resident = resident
	c.log.Debug("cuda: kernels loaded", "resident blocks", resident, "blocks per launch", c.plan.maxBlocks, "launches that fit", c.plan.fit())
	if c.busID, err = c.dev.PCIBusID(); err != nil {
		return err
	}
	c.stream, err = driver.StreamCreate(driver.StreamNonBlocking)
	c.last = c.stream
	return err
}

// setupBuffers allocates this rank's buffer and the host-mapped record.
func (c *Comm) setupBuffers() error {
	var size int
	c.llOff, size = bufferLayout(c.capacity, c.world, c.plan.llMax)
	var err error
	if c.buf, err = driver.MemAlloc(size); err != nil {
		return fmt.Errorf("allocate %d bytes of staging: %w", size, err)
	}
	c.bufLen = size
	c.plan.staging = uint64(c.buf + ctrlSize)
	if c.host, err = driver.MemHostAllocMapped(recSize); err != nil {
		return err
	}
	clear(c.host.Bytes())
	c.hostDev, err = driver.MemHostGetDevicePointer(c.host)
	return err
}

// mapPeers exchanges IPC handles, capacities and thresholds, process ids
// and rank 0's first seq through the rendezvous and opens every peer's
// buffer.
func (c *Comm) mapPeers(ctx context.Context) error {
	c.peers = make([]driver.DevicePtr, c.world)
	c.peers[c.rank] = c.buf
	c.pids = make([]int, c.world)
	c.pids[c.rank] = os.Getpid()
	c.seq0 = drawSeq0()
	if c.world == 1 {
		return nil
	}
	h, err := driver.IPCGetMemHandle(c.buf)
	if err != nil {
		return err
	}
	// handle, then the buffer's offset inside its allocation (0: it is
	// one), this rank's first seq (rank 0's counts) and process id, how
	// many waiting kernels fit on its GPU and the GPU's bus id (share.go),
	// then the settings every rank must share.
	const head = 64 + 4*8 + busIDLen
	settings := fmt.Sprintf("capacity=%d %v", c.capacity, c.plan)
	mine := append(h[:], make([]byte, head-64)...)
	binary.LittleEndian.PutUint64(mine[72:], c.seq0)
	binary.LittleEndian.PutUint64(mine[80:], uint64(os.Getpid()))
	binary.LittleEndian.PutUint64(mine[88:], uint64(c.plan.fit()))
	copy(mine[96:head], c.busID)
	mine = append(mine, settings...)
	all, err := c.rdv.AllGather(ctx, "cuda/ipc", mine)
	if err != nil {
		return fmt.Errorf("exchange IPC handles: %w", err)
	}
	if len(all[0]) >= head {
		c.seq0 = binary.LittleEndian.Uint64(all[0][72:])
	}
	gpus := make([]gpuOf, len(all))
	for p, v := range all {
		if p == c.rank {
			continue
		}
		if len(v) < head || string(v[head:]) != settings {
			return base.Invalidf("rank %d has %q, rank %d has %q: every rank must open with the same options",
				p, v[min(len(v), head):], c.rank, settings)
		}
	}
	for p, v := range all {
		gpus[p] = gpuOf{busID: string(bytes.TrimRight(v[96:head], "\x00")), fit: int(binary.LittleEndian.Uint64(v[88:]))}
	}
	if err := c.share.count(c.rank, c.plan.maxBlocks, gpus); err != nil {
		return err
	}
	for p, v := range all {
		if p == c.rank {
			continue
		}
		c.pids[p] = int(binary.LittleEndian.Uint64(v[80:]))
		var ph driver.IPCMemHandle
		copy(ph[:], v)
		ptr, err := driver.IPCOpenMemHandle(ph)
		if err != nil {
			return fmt.Errorf("map rank %d's buffer: %w", p, err)
		}
		c.opened = append(c.opened, ptr)
		c.peers[p] = ptr + driver.DevicePtr(binary.LittleEndian.Uint64(v[64:72]))
	}
	c.plan.peerStaging = make([]uint64, c.world)
	for p, b := range c.peers {
		c.plan.peerStaging[p] = uint64(b + ctrlSize)
	}
	return nil
}

// current locks the calling goroutine to its thread and makes the
// context current there; the caller defers runtime.UnlockOSThread.
func (c *Comm) current() error {
	runtime.LockOSThread()
	if cur, err := driver.CurrentContext(); err == nil && cur == c.ctx {
		return nil
	}
	return c.ctx.SetCurrent()
}

// Device returns the CUDA device ordinal of this rank.
func (c *Comm) Device() int { return c.device }

// hostWord is the host's atomic view of the word at off of the
// host-mapped memory (the abort word, the record's valid word).
func (c *Comm) hostWord(off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Add(c.host.Ptr(), off))
}

// String describes the settings that every rank must share.
func (p planner) String() string {
	return fmt.Sprintf("ll<=%d window=%d blocks<=%d", p.llMax, p.llWindow, p.maxBlocks)
}

// defaultLLMax is the largest image the LL protocol carries by default:
// 2 MiB at W <= 2, where on 2 x H200 it beat the other paths up to there
// for every operation and lost at 4 MiB for all-gathers (docs/gpu-
// results.md); less as W grows, since every rank then sends its whole
// input to W-1 peers and the LL area (llAreaSize) grows with W.
// It is a whole number of 64-byte lines, as the kernels require.
func defaultLLMax(world int) int { return max(64<<10, (4<<20)/max(world, 2)&^63) }

// defaultLLWindow gives each thread of an LL launch one line (8 bytes) of
// the image per buffer.
const defaultLLWindow = 8 * block

// The variables that override the LL defaults for measuring (tuning
// knobs, not API). Every rank must set the same values.
const (
	envLLMax    = settings.CUDALLMax
	envLLWindow = settings.CUDALLWindow
	// envMaxBlocks caps the blocks of a launch that may wait (share.go).
	envMaxBlocks = settings.CUDAMaxBlocks
	// envShareDevices=1 puts a rank whose device is past the visible ones
	// on device mod their count: ranks then share GPUs, time-sliced, which
	// checks correctness (detcoll verify -n 2 on one GPU) and measures
	// nothing.
	envShareDevices = settings.ShareDevices
)

// newPlanner is the planner of rank of world with the defaults and the
// environment's knobs: Open's, and CallTraffic's.
func newPlanner(rank, world int) (planner, error) {
	p := planner{rank: rank, world: world, llMax: defaultLLMax(world), llWindow: defaultLLWindow, block: block, maxBlocks: defaultMaxBlocks(world)}
	if err := p.fromEnv(); err != nil {
		return p, base.Invalidf("%v", err)
	}
	return p, nil
}

func (p *planner) fromEnv() error {
	var err error
	if p.llMax, err = base.TuningKnob(envLLMax, p.llMax, 0, 64); err != nil {
		return err
	}
	if p.llWindow, err = base.TuningKnob(envLLWindow, p.llWindow, 64, 64); err != nil {
		return err
	}
	if p.maxBlocks, err = base.TuningKnob(envMaxBlocks, p.maxBlocks, 1, 1); err != nil {
		return err
	}
	if p.pushEngine, err = pushEngineFromEnv(); err != nil {
		return err
	}
	p.profile, err = profileFromEnv()
	return err
}
