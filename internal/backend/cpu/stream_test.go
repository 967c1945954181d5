package cpu

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// TestInProcessStreamed runs streamed all-gathers (in and out of place)
// and broadcasts from every root back to back, in chunks much smaller than
// the inputs, and compares every byte; then a streamed call whose peer
// calls something else must fail on both ranks with the output unchanged.
func TestInProcessStreamed(t *testing.T) {
	t.Setenv(envStreamMin, "1")
	t.Setenv(envStreamChunk, "4096")
	for _, world := range []int{2, 3} {
		t.Run(fmt.Sprint("W=", world), func(t *testing.T) {
			comms := openJob(t, world, 20*time.Second)
			input := func(call, r, n int) []byte {
				b := make([]byte, n)
				for i := range b {
					b[i] = byte(call*31 + r*7 + i + i>>8)
				}
				return b
			}
			for call, n := range []int{1, 4095, 4096, 4097, 20000, 65536} {
				if comms[0].path(&base.Request{Op: base.OpAllGather, In: [][]byte{make([]byte, n)}, Out: [][]byte{nil}}) != proto.Streamed {
					t.Fatalf("n=%d: not streamed", n)
				}
				want := make([]byte, 0, world*n)
				for r := range world {
					want = append(want, input(call, r, n)...)
				}
				for _, inPlace := range []bool{false, true} {
					outs := make([][]byte, world)
					errs := each(comms, func(c *Comm) error {
						outs[c.rank] = make([]byte, world*n)
						in := input(call, c.rank, n)
						if inPlace {
							in = outs[c.rank][c.rank*n : (c.rank+1)*n]
							copy(in, input(call, c.rank, n))
						}
						return c.Do(&base.Request{Op: base.OpAllGather, DType: num.Uint8Type,
							In: [][]byte{in}, Out: [][]byte{outs[c.rank]}})
					})
					for r, err := range errs {
						if err != nil {
							t.Fatalf("all-gather n=%d in place %v rank %d: %v", n, inPlace, r, err)
						}
						if !bytes.Equal(outs[r], want) {
							t.Fatalf("all-gather n=%d in place %v rank %d: output differs", n, inPlace, r)
						}
					}
				}
				for root := range world {
					bufs := make([][]byte, world)
					errs := each(comms, func(c *Comm) error {
						bufs[c.rank] = input(call+1, c.rank, n)
						return c.Do(&base.Request{Op: base.OpBroadcast, DType: num.Uint8Type, Root: root,
							In: [][]byte{bufs[c.rank]}, Out: [][]byte{bufs[c.rank]}})
					})
					want := input(call+1, root, n)
					for r, err := range errs {
						if err != nil {
							t.Fatalf("broadcast n=%d root %d rank %d: %v", n, root, r, err)
						}
						if !bytes.Equal(bufs[r], want) {
							t.Fatalf("broadcast n=%d root %d rank %d: output differs", n, root, r)
						}
					}
				}
			}
		})
	}

	comms := openJob(t, 2, 20*time.Second)
	const n = 20000
	outs := [][]byte{bytes.Repeat([]byte{0xA5}, 2*n), bytes.Repeat([]byte{0xA5}, n)}
	errs := each(comms, func(c *Comm) error {
		in := bytes.Repeat([]byte{byte(c.rank + 1)}, n)
		if c.rank == 0 {
			return c.Do(&base.Request{Op: base.OpAllGather, DType: num.Uint8Type, In: [][]byte{in}, Out: [][]byte{outs[0]}})
		}
		return c.Do(&base.Request{Op: base.OpBroadcast, DType: num.Uint8Type, Root: 1, In: [][]byte{outs[1]}, Out: [][]byte{outs[1]}})
	})
	for r, err := range errs {
		var me *base.MismatchError
		if !errors.As(err, &me) {
			t.Errorf("mismatch rank %d: got %v, want a *MismatchError", r, err)
		}
		for i, b := range outs[r] {
			if b != 0xA5 {
				t.Fatalf("mismatch rank %d: output byte %d changed to %#x", r, i, b)
			}
		}
	}
}
