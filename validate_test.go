package detcoll_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/testkit/check"
	"github.com/detcoll/detcoll/internal/testkit/ranktest"
)

// badCall is one call that must be refused with ErrInvalid before any work.
type badCall struct {
	name string
	call func(c *detcoll.Comm, bufs *badBuffers) error
}

// badBuffers are filled with a pattern before each bad call; afterwards
// they must hold it still.
type badBuffers struct {
	a, b, big []float32
	u         []uint8
}

func newBadBuffers(capacity int) *badBuffers {
	bb := &badBuffers{a: make([]float32, 64), b: make([]float32, 64), big: make([]float32, (capacity+63)/64*16+1), u: make([]uint8, 64)}
	bb.fill()
	return bb
}

func (bb *badBuffers) fill() {
	for i := range bb.a {
		bb.a[i], bb.b[i] = float32(i)+0.5, -float32(i)-0.25
	}
	for i := range bb.u {
		bb.u[i] = byte(i) | 0x80
	}
}

func (bb *badBuffers) snapshot() []byte {
	return bytes.Join([][]byte{check.RawBytes(bb.a), check.RawBytes(bb.b), check.RawBytes(bb.u)}, nil)
}

func badCalls(w int) []badCall {
	return []badCall{
		{"AllReduce nil input", func(c *detcoll.Comm, bb *badBuffers) error { return detcoll.AllReduce(c, nil, bb.b) }},
		{"AllReduce nil output", func(c *detcoll.Comm, bb *badBuffers) error { return detcoll.AllReduce(c, bb.a, nil) }},
		{"AllReduce short output", func(c *detcoll.Comm, bb *badBuffers) error { return detcoll.AllReduce(c, bb.a, bb.b[:63]) }},
		{"AllReduce partial overlap", func(c *detcoll.Comm, bb *badBuffers) error { return detcoll.AllReduce(c, bb.a[:32], bb.a[1:33]) }},
		{"AllReduce over capacity", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.AllReduce(c, bb.big, make([]float32, len(bb.big)))
		}},
		{"ReduceScatter input not a multiple of W", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.ReduceScatter(c, bb.a[:w*3+1], bb.b[:3])
		}},
		{"ReduceScatter wrong output length", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.ReduceScatter(c, bb.a[:w*4], bb.b[:5])
		}},
		{"ReduceScatter overlap", func(c *detcoll.Comm, bb *badBuffers) error {
			r := (c.Rank() + 1) % w
			if w == 1 {
				return detcoll.ReduceScatter(c, bb.a[:4], bb.a[1:5])
			}
			return detcoll.ReduceScatter(c, bb.a[:w*4], bb.a[r*4:r*4+4])
		}},
		{"ReduceScatterMany input overlaps another output", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.ReduceScatterMany(c, [][]float32{bb.a[:w], bb.a[w : 2*w]}, [][]float32{bb.b[:1], bb.a[:1]})
		}},
		{"AllGather short output", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.AllGather(c, bb.u[:5], bb.u[5:5+w*5-1])
		}},
		{"AllGather input overlaps another slot", func(c *detcoll.Comm, bb *badBuffers) error {
			r := (c.Rank() + 1) % w
			if w == 1 {
				return detcoll.AllGather(c, bb.u[1:9], bb.u[:8])
			}
			return detcoll.AllGather(c, bb.u[r*4:r*4+4], bb.u[:w*4])
		}},
		{"Broadcast root out of range", func(c *detcoll.Comm, bb *badBuffers) error { return detcoll.Broadcast(c, bb.a, w) }},
		{"Broadcast negative root", func(c *detcoll.Comm, bb *badBuffers) error { return detcoll.Broadcast(c, bb.a, -1) }},
		{"Broadcast nil buffer", func(c *detcoll.Comm, bb *badBuffers) error { return detcoll.Broadcast[float32](c, nil, 0) }},
		{"AllGatherMany no buffers", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.AllGatherMany[uint8](c, nil, nil)
		}},
		{"AllGatherMany count mismatch", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.AllGatherMany(c, [][]uint8{bb.u[:2]}, [][]uint8{bb.u[2 : 2+2*w], bb.u[40:41]})
		}},
		{"AllGatherMany outputs overlap", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.AllGatherMany(c, [][]float32{bb.a[:1], bb.a[1:2]}, [][]float32{bb.b[:w], bb.b[w-1 : 2*w-1]})
		}},
		{"ReduceScatterMany nil output", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.ReduceScatterMany(c, [][]float32{bb.a[:w]}, [][]float32{nil})
		}},
		{"Stage over capacity", func(c *detcoll.Comm, bb *badBuffers) error {
			_, err := detcoll.Stage[float32](c, len(bb.big))
			return err
		}},
		{"Stage negative", func(c *detcoll.Comm, bb *badBuffers) error {
			_, err := detcoll.Stage[float32](c, -1)
			return err
		}},
		{"AllReduceStaged with nothing staged", func(c *detcoll.Comm, bb *badBuffers) error {
			return detcoll.AllReduceStaged(c, bb.b)
		}},
	}
}

// checkBadCalls runs every bad call on c and then a good one.
func checkBadCalls(c *detcoll.Comm) error {
	bb := newBadBuffers(int(c.Options().Capacity))
	for _, bc := range badCalls(c.WorldSize()) {
		bb.fill()
		before := bb.snapshot()
		err := bc.call(c, bb)
		if !errors.Is(err, detcoll.ErrInvalid) {
			return fmt.Errorf("%s: got %v, want ErrInvalid", bc.name, err)
		}
		if !bytes.Equal(before, bb.snapshot()) {
			return fmt.Errorf("%s: a buffer changed", bc.name)
		}
		if c.Err() != nil {
			return fmt.Errorf("%s poisoned the communicator: %v", bc.name, c.Err())
		}
	}
	if err := checkStagedMisuse(c); err != nil {
		return err
	}
	// Still usable: a good call works.
	in := []float32{1, 2, 3}
	out := make([]float32, 3)
	if err := detcoll.AllReduce(c, in, out); err != nil {
		return fmt.Errorf("good call after bad ones: %w", err)
	}
	w := float32(c.WorldSize())
	if out[0] != w || out[2] != 3*w {
		return fmt.Errorf("good call after bad ones: got %v", out)
	}
	return nil
}

// checkStagedMisuse: while a staged all-reduce is pending, other calls and
// outputs inside the staging are refused, the pending call still works;
// an input of exactly the capacity fits; ReduceScatter works in place.
func checkStagedMisuse(c *detcoll.Comm) error {
	w := c.WorldSize()
	view, err := detcoll.Stage[float32](c, 8)
	if err != nil {
		return err
	}
	for i := range view {
		view[i] = float32(i)
	}
	if err := detcoll.AllReduce(c, make([]float32, 8), make([]float32, 8)); !errors.Is(err, detcoll.ErrInvalid) {
		return fmt.Errorf("AllReduce while staged: got %v, want ErrInvalid", err)
	}
	if err := detcoll.AllReduceStaged(c, view); !errors.Is(err, detcoll.ErrInvalid) {
		return fmt.Errorf("AllReduceStaged into the staging view: got %v, want ErrInvalid", err)
	}
	if err := detcoll.AllReduceStaged(c, make([]float32, 7)); !errors.Is(err, detcoll.ErrInvalid) {
		return fmt.Errorf("AllReduceStaged with the wrong length: got %v, want ErrInvalid", err)
	}
	out := make([]float32, 8)
	if err := detcoll.AllReduceStaged(c, out); err != nil {
		return fmt.Errorf("AllReduceStaged after refused calls: %w", err)
	}
	if out[7] != 7*float32(w) {
		return fmt.Errorf("AllReduceStaged: got %v", out)
	}
	capacity := int(c.Options().Capacity)
	if capacity%4 == 0 {
		full := make([]float32, capacity/4)
		if err := detcoll.AllReduce(c, full, full); err != nil {
			return fmt.Errorf("AllReduce of exactly the capacity: %w", err)
		}
	}
	rs := make([]float32, 4*w)
	for i := range rs {
		rs[i] = float32(i)
	}
	share := rs[c.Rank()*4 : (c.Rank()+1)*4]
	if err := detcoll.ReduceScatter(c, rs, share); err != nil {
		return fmt.Errorf("ReduceScatter in place: %w", err)
	}
	if want := float32(c.Rank()*4+3) * float32(w); share[3] != want {
		return fmt.Errorf("ReduceScatter in place: got %v, want last element %v", share, want)
	}
	return nil
}

// badInputCapacity is a capacity that no float32 count fills exactly, so
// that "over capacity" is one element more.
const badInputCapacity = 65540

// roleBadInput is a rank of TestBadInputKeepsPeersUsable: every rank makes
// every bad call, then good ones.
func roleBadInput() error {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{Capacity: badInputCapacity})
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	if err := checkBadCalls(c); err != nil {
		return err
	}
	return c.Close(ctx)
}

func TestBadInputSingleRank(t *testing.T) {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: 1, Capacity: badInputCapacity})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := checkBadCalls(c); err != nil {
		t.Fatal(err)
	}
}

// TestBadInputKeepsPeersUsable: at W=3, bad calls on every rank change
// nothing and leave every peer's communicator usable.
func TestBadInputKeepsPeersUsable(t *testing.T) {
	ranktest.RequireOK(t, ranktest.Run(t, 3, "badinput", time.Minute))
}

func TestBadOptions(t *testing.T) {
	ctx := context.Background()
	for _, o := range []detcoll.Options{
		{Backend: "tpu", WorldSize: 1},
		{WorldSize: -1},
		{WorldSize: 2, Rank: 2, Addr: "127.0.0.1:1", Secret: "s"},
		{WorldSize: 1, Capacity: -5},
		{WorldSize: 1, Timeout: -time.Second},
		{WorldSize: 2, Rank: 0, Secret: "s"},
		{WorldSize: 2, Rank: 0, Addr: "127.0.0.1:1"},
		{WorldSize: 4, Hosts: -1, Interconnect: noInterconnect{}},
		{WorldSize: 4, Hosts: 3, Interconnect: noInterconnect{}},
		{WorldSize: 2, Hosts: 4, Interconnect: noInterconnect{}},
		{WorldSize: 4, Hosts: 2},
		{WorldSize: 4, Hosts: 2, Interconnect: noInterconnect{}, Rendezvous: noInterconnect{}.Host()},
		// cuda across hosts over an interconnect that moves no device memory
		{Backend: "cuda", WorldSize: 4, Hosts: 2, Interconnect: noInterconnect{}},
	} {
		if _, err := detcoll.Open(ctx, o); !errors.Is(err, detcoll.ErrInvalid) {
			t.Errorf("Open(%+v): got %v, want ErrInvalid", o, err)
		}
	}
}

// noInterconnect is an Interconnect for options that Open must refuse
// before it uses one.
type noInterconnect struct{}

func (noInterconnect) Host() detcoll.Rendezvous { return noRendezvous{} }
func (noInterconnect) AllGather(context.Context, []byte, []byte) error {
	return errors.New("noInterconnect: not for use")
}

type noRendezvous struct{}

func (noRendezvous) AllGather(context.Context, string, []byte) ([][]byte, error) {
	return nil, errors.New("noRendezvous: not for use")
}

// closingInterconnect counts its Close calls.
type closingInterconnect struct {
	noInterconnect
	closed *int
}

func (c closingInterconnect) Close() error { *c.closed++; return nil }

// TestFailedOpenClosesItsInterconnect: across hosts Open owns the
// Interconnect, so a failed Open closes it (package nccl's holds NCCL
// communicators and the store's port).
func TestFailedOpenClosesItsInterconnect(t *testing.T) {
	closed := 0
	o := detcoll.Options{Backend: "cuda", WorldSize: 4, Hosts: 2, Interconnect: closingInterconnect{closed: &closed}}
	if _, err := detcoll.Open(context.Background(), o); !errors.Is(err, detcoll.ErrInvalid) {
		t.Fatalf("Open = %v; want ErrInvalid (the interconnect moves no device memory)", err)
	}
	if closed != 1 {
		t.Errorf("the Interconnect was closed %d times; want once", closed)
	}
}

// TestRegisterDeviceNeedsCUDA: a cpu communicator has no windows:
// RegisterDevice is ErrInvalid, and ErrClosed once closed.
func TestRegisterDeviceNeedsCUDA(t *testing.T) {
	ctx := context.Background()
	c, err := detcoll.Open(ctx, detcoll.Options{WorldSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := c.RegisterDevice(ctx, 1<<20, 4096); !errors.Is(err, detcoll.ErrInvalid) || w != nil {
		t.Errorf("RegisterDevice on cpu: %v, %v; want ErrInvalid", w, err)
	}
	c.Close(ctx)
	if _, err := c.RegisterDevice(ctx, 1<<20, 4096); !errors.Is(err, detcoll.ErrClosed) {
		t.Errorf("RegisterDevice after Close: %v; want ErrClosed", err)
	}
}
