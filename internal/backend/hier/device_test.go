package hier_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/backend/cpu"
	"github.com/detcoll/detcoll/internal/backend/hier"
	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
	"github.com/detcoll/detcoll/internal/core/tree"
	"github.com/detcoll/detcoll/internal/testkit/check"
)

// The device schedule (device.go) over stand-ins: "device memory" is an
// arena of Go byte slices addressed by number, the host's communicator a
// real cpu backend run on those slices at once (streams are not modelled:
// every queued operation runs when queued, which is one order a stream
// allows), and the device rail the in-memory rail's all-gather. What the
// GPU adds (NCCL, the kernels) is the cuda backend's and package nccl's to
// test on a GPU; what is checked here is that the schedule's addresses,
// sizes and order give the flat tree's bits.

// arena is device memory for the stand-ins: blocks at addresses that never
// overlap, found by address.
type arena struct {
	mu     sync.Mutex
	next   uint64
	blocks map[uint64][]byte
	bases  []uint64 // sorted
}

func newArena() *arena { return &arena{next: 1 << 20, blocks: map[uint64][]byte{}} }

func (a *arena) alloc(n int) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.next
	a.next += uint64(n+4096) &^ 4095
	a.blocks[p] = make([]byte, n)
	a.bases = append(a.bases, p)
	return p
}

func (a *arena) free(p uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.blocks[p]; !ok {
		return fmt.Errorf("free of %#x: not allocated", p)
	}
	delete(a.blocks, p)
	i := sort.Search(len(a.bases), func(i int) bool { return a.bases[i] >= p })
	a.bases = append(a.bases[:i], a.bases[i+1:]...)
	return nil
}

// mem returns the n bytes at p; they must lie in one block.
func (a *arena) mem(p uint64, n int) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := sort.Search(len(a.bases), func(i int) bool { return a.bases[i] > p }) - 1
	if i < 0 {
		panic(fmt.Sprintf("address %#x: below every block", p))
	}
	b := a.blocks[a.bases[i]]
	off := int(p - a.bases[i])
	if off+n > len(b) {
		panic(fmt.Sprintf("%d bytes at %#x: past its block of %d bytes at %#x", n, p, len(b), a.bases[i]))
	}
	return b[off : off+n : off+n]
}

// fakeDevice is a hier.DeviceLocal: a cpu backend on arena memory.
type fakeDevice struct {
	*cpu.Comm
	a       *arena
	reducer tree.Reducer

	// The rail's signature check, as the cuda backend's kernels make it:
	// the calls counted, this rank's signature and every host's in the
	// arena. A mismatch is recorded, not returned, as the kernel records
	// it: the device's work after it does nothing (the kernels stop, the
	// rail is aborted), and Err and Synchronize report it.
	hosts     int
	calls     uint64
	mine, all uint64
	mismatch  atomic.Pointer[error]
	// capturing makes Capturing say so; allocs and frees count calls.
	capturing     bool
	allocs, frees int
}

const sigBytes = 8 * proto.SignatureWords

func (d *fakeDevice) PrepareRail(hosts int) error {
	d.hosts, d.mine, d.all = hosts, d.a.alloc(sigBytes), d.a.alloc(hosts*sigBytes)
	return nil
}

func (d *fakeDevice) SignRail(sig base.Signature, _ uintptr) (send, recv uint64, n int, err error) {
	d.calls++
	sig.Seq = d.calls
	m := d.a.mem(d.mine, sigBytes)
	for k, w := range proto.EncodeSignature(sig) {
		binary.LittleEndian.PutUint64(m[8*k:], w)
	}
	return d.mine, d.all, sigBytes, nil
}

func (d *fakeDevice) CheckRail(uintptr) error {
	mine, all := d.a.mem(d.mine, sigBytes), d.a.mem(d.all, d.hosts*sigBytes)
	var sigs []base.Signature
	same := true
	for h := range d.hosts {
		got := all[h*sigBytes : (h+1)*sigBytes]
		same = same && bytes.Equal(got, mine)
		var w [proto.SignatureWords]uint64
		for k := range w {
			w[k] = binary.LittleEndian.Uint64(got[8*k:])
		}
		for range d.World() {
			sigs = append(sigs, proto.DecodeSignature(w))
		}
	}
	if !same {
		var err error = &base.MismatchError{Signatures: sigs}
		d.mismatch.CompareAndSwap(nil, &err)
	}
	return nil
}

// stopped says whether the device's work does nothing now: a mismatch
// stopped it.
func (d *fakeDevice) stopped() bool { return d.mismatch.Load() != nil }

func (d *fakeDevice) Err() error {
	if p := d.mismatch.Load(); p != nil {
		return *p
	}
	return d.Comm.Err()
}

func (d *fakeDevice) Idle(time.Duration) bool { return true }

func (d *fakeDevice) bufs(bs []base.DeviceBuf) [][]byte {
	out := make([][]byte, len(bs))
	for i, b := range bs {
		out[i] = d.a.mem(b.Addr, b.Len)
	}
	return out
}

func (d *fakeDevice) Enqueue(r *base.DeviceRequest) error {
	if d.stopped() {
		return nil
	}
	scalar := r.Scalar
	if r.ScalarAt != 0 { // read as the call runs, as the kernels do
		scalar = append([]byte(nil), d.a.mem(r.ScalarAt, r.DType.Size())...)
	}
	return d.Do(&base.Request{Op: r.Op, DType: r.DType, Red: r.Red, Scalar: scalar, Root: r.Root, In: d.bufs(r.In), Out: d.bufs(r.Out)})
}
func (d *fakeDevice) Synchronize(uintptr) error { return d.Err() }
func (d *fakeDevice) Device() int               { return 0 }
func (d *fakeDevice) Alloc(n int) (uint64, error) {
	d.allocs++
	return d.a.alloc(n), nil
}
func (d *fakeDevice) Free(p uint64) error {
	d.frees++
	return d.a.free(p)
}
func (d *fakeDevice) Copy(dst, src uint64, n int, _ uintptr) error {
	if d.stopped() {
		return nil
	}
	copy(d.a.mem(dst, n), d.a.mem(src, n))
	return nil
}
func (d *fakeDevice) Zero(dst uint64, n int, _ uintptr) error {
	if d.stopped() {
		return nil
	}
	clear(d.a.mem(dst, n))
	return nil
}
func (d *fakeDevice) Capturing(uintptr) (bool, error) { return d.capturing, nil }
func (d *fakeDevice) Fence(uintptr) error {
	if d.capturing {
		return errors.New("Fence while capturing: an event recorded in a capture is no fence")
	}
	return nil
}
func (d *fakeDevice) WaitFence(time.Duration) error {
	if d.capturing {
		return errors.New("WaitFence while capturing: a capture must not wait")
	}
	return nil
}
func (d *fakeDevice) TreeReduce(dt num.DType, node num.RedOp, dst uint64, srcs []uint64, n int, _ uintptr) error {
	if d.stopped() {
		return nil
	}
	size := dt.Size()
	in := make([][]byte, len(srcs))
	for i, s := range srcs {
		in[i] = d.a.mem(s, n*size)
	}
	d.reducer.Reduce(dt, node, d.a.mem(dst, n*size), in)
	return nil
}
func (d *fakeDevice) Average(dt num.DType, p uint64, n, w int, _ uintptr) error {
	if d.stopped() {
		return nil
	}
	num.Average(dt, d.a.mem(p, n*dt.Size()), w)
	return nil
}

// deviceRail is the in-memory rail, moving arena memory too; after a
// mismatch its rank's device found, it moves nothing (NCCL's kernels
// aborted), as every host's rank on it found the same.
type deviceRail struct {
	rail
	a   *arena
	dev *fakeDevice
}

func (v deviceRail) AllGatherDevice(send, recv uint64, n int, _ uintptr) error {
	if v.dev.stopped() {
		return nil
	}
	return v.AllGather(context.Background(), v.a.mem(send, n), v.a.mem(recv, n*v.g.n))
}

// exchangingDeviceRail is a deviceRail that is a hier.DeviceExchanger,
// through a mailbox per ordered pair of hosts.
type exchangingDeviceRail struct {
	deviceRail
	x *mailboxes
}

func (v exchangingDeviceRail) ExchangeDevice(peer int, send uint64, sendN int, recv uint64, recvN int, _ uintptr) error {
	if v.dev.stopped() {
		return nil
	}
	v.x.to(v.h, peer) <- append([]byte{}, v.a.mem(send, sendN)...)
	got := <-v.x.to(peer, v.h)
	if len(got) != recvN {
		return fmt.Errorf("host %d sent %d bytes, want %d", peer, len(got), recvN)
	}
	copy(v.a.mem(recv, recvN), got)
	return nil
}

// deviceJob opens W = hosts x perHost ranks of fake devices on one arena;
// their rails halve where hier does (four or more hosts, a power of two).
func deviceJob(t *testing.T, hosts, perHost int, capacity int64) ([]*hier.Comm, *arena) {
	return deviceJobWith(t, hosts, perHost, capacity, true)
}

func deviceJobWith(t *testing.T, hosts, perHost int, capacity int64, exchange bool) ([]*hier.Comm, *arena) {
	a := newArena()
	comms := jobOf(t, hosts, perHost, capacity, func(local *cpu.Comm, rl rail, boxes *mailboxes) (hier.Local, hier.Rail) {
		dev := &fakeDevice{Comm: local, a: a}
		if exchange {
			return dev, exchangingDeviceRail{deviceRail{rl, a, dev}, boxes}
		}
		return dev, deviceRail{rl, a, dev}
	})
	return comms, a
}

// guarded places b in the arena at an odd element offset, with guard bytes
// on both sides, and returns its address and a check of the guards.
func guarded(a *arena, b []byte, size int) (uint64, func() error) {
	const guard = 24
	pad := guard + size // the buffer starts off a multiple of 16 bytes
	p := a.alloc(len(b) + pad + guard)
	m := a.mem(p, len(b)+pad+guard)
	for i := range m {
		m[i] = 0xa5
	}
	copy(m[pad:], b)
	return p + uint64(pad), func() error {
		for i, v := range m {
			if (i < pad || i >= pad+len(b)) && v != 0xa5 {
				return fmt.Errorf("guard byte %d of %d changed to %#x", i, len(m), v)
			}
		}
		return nil
	}
}

// TestDeviceSumsAreTheFlatTree: the device schedule's all-reduce (also in
// place and staged) and reduce-scatter give the flat tree's bits, for odd
// sizes and misaligned buffers, writing nothing outside their outputs.
func TestDeviceSumsAreTheFlatTree(t *testing.T) {
	for _, l := range []struct {
		hosts, perHost int
		exchange       bool
	}{{2, 1, true}, {3, 1, true}, {2, 2, true}, {3, 2, true}, {2, 4, true}, {4, 2, true}, {5, 1, true},
		{4, 1, true}, {8, 1, true}, {4, 2, false}, {8, 1, false}} {
		t.Run(fmt.Sprintf("%dx%d/exchange=%v", l.hosts, l.perHost, l.exchange), func(t *testing.T) {
			w := l.hosts * l.perHost
			comms, a := deviceJobWith(t, l.hosts, l.perHost, 4097*8*int64(w), l.exchange)
			call := 0
			outs := make([]uint64, w)
			guards := make([]func() error, w)
			for _, dt := range floats {
				size := dt.Size()
				for _, n := range []int{1, 3, 7, 64, 1000, 4097} {
					for _, mode := range []string{"out", "inplace", "staged"} {
						call++
						ins := make([][]byte, w)
						for r := range ins {
							ins[r] = check.Input(5, call, r, n, dt)
						}
						want := check.ReferenceSum(dt, ins)
						noErrors(t, "AllReduce "+mode, each(comms, func(r int, c *hier.Comm) error {
							in, _ := guarded(a, ins[r], size)
							outs[r], guards[r] = guarded(a, make([]byte, len(ins[r])), size)
							switch mode {
							case "inplace":
								copy(a.mem(outs[r], len(ins[r])), ins[r])
								in = outs[r]
							case "staged":
								p, err := c.StageDevice(len(ins[r]), 0)
								if err != nil {
									return err
								}
								copy(a.mem(p, len(ins[r])), ins[r])
								return c.Enqueue(&base.DeviceRequest{Op: base.OpAllReduceStaged, DType: dt,
									Out: []base.DeviceBuf{{Addr: outs[r], Len: len(ins[r])}}})
							}
							return c.Enqueue(&base.DeviceRequest{Op: base.OpAllReduce, DType: dt,
								In: []base.DeviceBuf{{Addr: in, Len: len(ins[r])}}, Out: []base.DeviceBuf{{Addr: outs[r], Len: len(ins[r])}}})
						}))
						for r := range outs {
							if err := check.FirstDiff(dt, a.mem(outs[r], len(want)), want); err != nil {
								t.Fatalf("AllReduce %s %v n=%d rank %d: %v", mode, dt, n, r, err)
							}
							if err := guards[r](); err != nil {
								t.Fatalf("AllReduce %s %v n=%d rank %d: %v", mode, dt, n, r, err)
							}
						}
					}
					call++
					big := make([][]byte, w)
					for r := range big {
						big[r] = check.Input(5, call, r, n*w, dt)
					}
					wantBig := check.ReferenceSum(dt, big)
					m := n * size
					noErrors(t, "ReduceScatter", each(comms, func(r int, c *hier.Comm) error {
						in, _ := guarded(a, big[r], size)
						outs[r], guards[r] = guarded(a, make([]byte, m), size)
						return c.Enqueue(&base.DeviceRequest{Op: base.OpReduceScatter, DType: dt,
							In: []base.DeviceBuf{{Addr: in, Len: len(big[r])}}, Out: []base.DeviceBuf{{Addr: outs[r], Len: m}}})
					}))
					for r := range outs {
						if err := check.FirstDiff(dt, a.mem(outs[r], m), wantBig[r*m:(r+1)*m]); err != nil {
							t.Fatalf("ReduceScatter %v n=%d rank %d: %v", dt, n, r, err)
						}
						if err := guards[r](); err != nil {
							t.Fatalf("ReduceScatter %v n=%d rank %d: %v", dt, n, r, err)
						}
					}
				}
			}
		})
	}
}

// TestDeviceGathersAndBroadcast: the device schedule's all-gather and
// broadcast from every root, byte exact.
func TestDeviceGathersAndBroadcast(t *testing.T) {
	for _, l := range []struct{ hosts, perHost int }{{2, 1}, {3, 1}, {2, 2}, {3, 2}} {
		t.Run(fmt.Sprintf("%dx%d", l.hosts, l.perHost), func(t *testing.T) {
			w := l.hosts * l.perHost
			comms, a := deviceJob(t, l.hosts, l.perHost, 1<<16)
			for _, n := range []int{1, 13, 1000} {
				ins := make([][]byte, w)
				var want []byte
				for r := range ins {
					ins[r] = check.Input(6, n, r, n, num.Uint8Type)
					want = append(want, ins[r]...)
				}
				outs := make([]uint64, w)
				guards := make([]func() error, w)
				noErrors(t, "AllGather", each(comms, func(r int, c *hier.Comm) error {
					in, _ := guarded(a, ins[r], 1)
					outs[r], guards[r] = guarded(a, make([]byte, w*n), 1)
					return c.Enqueue(&base.DeviceRequest{Op: base.OpAllGather, DType: num.Uint8Type,
						In: []base.DeviceBuf{{Addr: in, Len: n}}, Out: []base.DeviceBuf{{Addr: outs[r], Len: w * n}}})
				}))
				for r := range outs {
					if got := a.mem(outs[r], w*n); !bytes.Equal(got, want) {
						t.Fatalf("AllGather n=%d rank %d: wrong bytes", n, r)
					}
					if err := guards[r](); err != nil {
						t.Fatalf("AllGather n=%d rank %d: %v", n, r, err)
					}
				}
				for root := range w {
					noErrors(t, "Broadcast", each(comms, func(r int, c *hier.Comm) error {
						outs[r], guards[r] = guarded(a, ins[r], 1)
						return c.Enqueue(&base.DeviceRequest{Op: base.OpBroadcast, DType: num.Uint8Type, Root: root,
							In: []base.DeviceBuf{{Addr: outs[r], Len: n}}, Out: []base.DeviceBuf{{Addr: outs[r], Len: n}}})
					}))
					for r := range outs {
						if got := a.mem(outs[r], n); !bytes.Equal(got, ins[root]) {
							t.Fatalf("Broadcast n=%d root %d rank %d: wrong bytes", n, root, r)
						}
						if err := guards[r](); err != nil {
							t.Fatalf("Broadcast n=%d root %d rank %d: %v", n, root, r, err)
						}
					}
				}
			}
		})
	}
}

// TestDeviceNeedsADeviceRail: a device communicator over a rail that
// moves only host memory is refused at New, saying what is missing.
func TestDeviceNeedsADeviceRail(t *testing.T) {
	_, err := hier.New(hier.Config{Hosts: 2, Host: 0, PerHost: 1, Local: &fakeDevice{a: newArena()}, Rail: rail{newGroup(2), 0, nil}})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("device memory")) {
		t.Fatalf("New = %v, want a refusal naming device memory", err)
	}
}

// TestDeviceOperatorsAreTheFlatTree: every operator on every element type
// it takes, across hosts on device memory, gives the flat tree's bits
// (check.ReferenceReduce over all ranks), for all-reduce and
// reduce-scatter; PreMulSum's factor in the call on even ranks, in device
// memory on odd ones.
func TestDeviceOperatorsAreTheFlatTree(t *testing.T) {
	for _, l := range []struct{ hosts, perHost int }{{2, 1}, {2, 2}, {3, 2}, {4, 1}} {
		t.Run(fmt.Sprintf("%dx%d", l.hosts, l.perHost), func(t *testing.T) {
			w := l.hosts * l.perHost
			comms, a := deviceJobWith(t, l.hosts, l.perHost, 1000*8*int64(w), true)
			call := 0
			outs := make([]uint64, w)
			guards := make([]func() error, w)
			for _, red := range num.RedOps() {
				for dt := num.BFloat16Type; dt <= num.Uint64Type; dt++ {
					if !red.Supports(dt) {
						continue
					}
					size, scalars := dt.Size(), check.PremulFactors(dt, w)
					opOf := func(r int) (num.RedOp, []byte, uint64) {
						if red != num.PreMulSum {
							return red, nil, 0
						}
						b := check.ScalarBytes(dt, check.PremulFactor(r))
						if r%2 == 1 {
							at, _ := guarded(a, b, size)
							return red, nil, at
						}
						return red, b, 0
					}
					for _, n := range []int{1, 7, 999} {
						call++
						ins := make([][]byte, w)
						for r := range ins {
							ins[r] = check.Input(6, call, r, n*w, dt)
						}
						want := check.ReferenceReduce(dt, red, ins, scalars)
						for _, op := range []base.Op{base.OpAllReduce, base.OpReduceScatter} {
							m := len(want)
							if op == base.OpReduceScatter {
								m /= w
							}
							noErrors(t, fmt.Sprintf("%v %v %v", op, red, dt), each(comms, func(r int, c *hier.Comm) error {
								in, _ := guarded(a, ins[r], size)
								outs[r], guards[r] = guarded(a, make([]byte, m), size)
								rr, scalar, at := opOf(r)
								return c.Enqueue(&base.DeviceRequest{Op: op, DType: dt, Red: rr, Scalar: scalar, ScalarAt: at,
									In: []base.DeviceBuf{{Addr: in, Len: len(ins[r])}}, Out: []base.DeviceBuf{{Addr: outs[r], Len: m}}})
							}))
							for r := range outs {
								wantR := want
								if op == base.OpReduceScatter {
									wantR = want[r*m : (r+1)*m]
								}
								if err := check.FirstDiff(dt, a.mem(outs[r], m), wantR); err != nil {
									t.Fatalf("%v %v %v n=%d rank %d: %v", op, red, dt, n, r, err)
								}
								if err := guards[r](); err != nil {
									t.Fatalf("%v %v %v n=%d rank %d: %v", op, red, dt, n, r, err)
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestDeviceHostsMismatch: hosts that make different calls fail every
// rank with a *MismatchError that lists every rank's signature (each
// host's ranks with their host's), found by the rail's signature check;
// the communicator stays failed.
func TestDeviceHostsMismatch(t *testing.T) {
	for _, l := range []struct{ hosts, perHost int }{{2, 1}, {2, 2}, {3, 1}} {
		t.Run(fmt.Sprintf("%dx%d", l.hosts, l.perHost), func(t *testing.T) {
			w := l.hosts * l.perHost
			comms, a := deviceJob(t, l.hosts, l.perHost, 1<<16)
			call := func(r int, c *hier.Comm, n int) error {
				in, out := a.alloc(4*n), a.alloc(4*n)
				return c.Enqueue(&base.DeviceRequest{Op: base.OpAllReduce, DType: num.Float32Type,
					In: []base.DeviceBuf{{Addr: in, Len: 4 * n}}, Out: []base.DeviceBuf{{Addr: out, Len: 4 * n}}})
			}
			noErrors(t, "a matched call first", each(comms, func(r int, c *hier.Comm) error { return call(r, c, 100) }))
			errs := each(comms, func(r int, c *hier.Comm) error {
				n := 100
				if r < l.perHost {
					n = 101 // host 0
				}
				// Queued: the check runs on the device; Synchronize
				// reports what it found.
				if err := call(r, c, n); err != nil {
					return fmt.Errorf("the mismatched call itself: %w", err)
				}
				return c.Synchronize(0)
			})
			for r, err := range errs {
				var me *base.MismatchError
				if !errors.As(err, &me) {
					t.Fatalf("rank %d: %v; want a *MismatchError", r, err)
				}
				if len(me.Signatures) != w {
					t.Fatalf("rank %d: %d signatures, want %d: %v", r, len(me.Signatures), w, err)
				}
				for p, sig := range me.Signatures {
					if want := uint64(100 + b2i(p < l.perHost)); sig.Count != want || sig.Seq != 2 {
						t.Fatalf("rank %d: signature of rank %d is %+v; want count %d, the second call", r, p, sig, want)
					}
				}
			}
			for r, c := range comms {
				if err := call(r, c, 100); !errors.Is(err, base.ErrMismatch) {
					t.Fatalf("rank %d: the call after a mismatch: %v; want the mismatch again", r, err)
				}
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDeviceCaptureKeepsScratch: a call captured in a CUDA graph neither
// fences nor waits (the stand-in fails if it does), and scratch that a
// graph may use is never freed before Close, even when a later call needs
// more; the results are the flat tree's throughout.
func TestDeviceCaptureKeepsScratch(t *testing.T) {
	const hosts, perHost = 2, 2
	w := hosts * perHost
	a := newArena()
	var devs []*fakeDevice
	var mu sync.Mutex
	comms := jobOf(t, hosts, perHost, 1<<20, func(local *cpu.Comm, rl rail, boxes *mailboxes) (hier.Local, hier.Rail) {
		d := &fakeDevice{Comm: local, a: a}
		mu.Lock()
		devs = append(devs, d)
		mu.Unlock()
		return d, exchangingDeviceRail{deviceRail{rl, a, d}, boxes}
	})
	dt := num.Float32Type
	for i, n := range []int{10, 1000, 100, 5000} {
		capturing := i == 1
		for _, d := range devs {
			d.capturing = capturing
		}
		ins := make([][]byte, w)
		for r := range ins {
			ins[r] = check.Input(9, i, r, n, dt)
		}
		want := check.ReferenceSum(dt, ins)
		outs := make([]uint64, w)
		noErrors(t, fmt.Sprintf("call %d (capturing %v)", i, capturing), each(comms, func(r int, c *hier.Comm) error {
			in, _ := guarded(a, ins[r], 4)
			outs[r], _ = guarded(a, make([]byte, len(want)), 4)
			return c.Enqueue(&base.DeviceRequest{Op: base.OpAllReduce, DType: dt,
				In: []base.DeviceBuf{{Addr: in, Len: len(want)}}, Out: []base.DeviceBuf{{Addr: outs[r], Len: len(want)}}})
		}))
		for r := range outs {
			if err := check.FirstDiff(dt, a.mem(outs[r], len(want)), want); err != nil {
				t.Fatalf("call %d n=%d rank %d: %v", i, n, r, err)
			}
		}
	}
	for r, d := range devs {
		if d.frees != 0 {
			t.Fatalf("device %d: %d frees before Close; a graph may still use that scratch", r, d.frees)
		}
	}
	noErrors(t, "Close", each(comms, func(r int, c *hier.Comm) error { return c.Close(context.Background()) }))
	for r, d := range devs {
		if d.frees != d.allocs {
			t.Fatalf("device %d: %d allocations, %d frees at Close", r, d.allocs, d.frees)
		}
	}
}
