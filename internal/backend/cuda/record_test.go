package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// fakeRecord writes a record as a kernel would.
func fakeRecord(code, phase uint64, op base.Op, seq, missing, aux uint64, sigs []base.Signature) []byte {
	mem := make([]byte, recSize)
	put := func(off int, v uint64) { binary.LittleEndian.PutUint64(mem[off:], v) }
	put(recCode, code)
	put(recPhase, phase)
	put(recOp, uint64(op))
	put(recSeq, seq)
	put(recMissing, missing)
	put(recAux, aux)
	for p, s := range sigs {
		w := []uint64{uint64(s.Op), uint64(s.DType), s.Count, uint64(s.Root), uint64(s.Buffers), s.Layout, s.Seq}
		for k, v := range w {
			put(recSigs+8*(p*sigWords+k), v)
		}
	}
	put(recValid, 1)
	return mem
}

func TestDecodeRecord(t *testing.T) {
	if _, ok := decodeRecord(make([]byte, recSize), 2); ok {
		t.Fatal("an empty record decoded as a failure")
	}
	sigs := []base.Signature{
		{Op: base.OpAllReduce, DType: num.Float32Type, Count: 1000, Buffers: 1, Seq: 7},
		{Op: base.OpAllGather, DType: num.Uint8Type, Count: 1000, Buffers: 1, Seq: 7},
	}
	const timeout = 3 * time.Second
	for _, tc := range []struct {
		name  string
		mem   []byte
		check func(error) bool
	}{
		{"timeout", fakeRecord(codeTimeout, uint64(proto.PhaseReady), base.OpAllReduce, 9, 0b1010, 0, sigs), func(err error) bool {
			var te *base.TimeoutError
			return errors.As(err, &te) && errors.Is(err, context.DeadlineExceeded) && te.Op == base.OpAllReduce &&
				te.Seq == 9 && reflect.DeepEqual(te.Missing, []int{1, 3}) && te.After == timeout && te.Phase == proto.PhaseReady.String()
		}},
		{"mismatch", fakeRecord(codeMismatch, uint64(proto.PhaseReady), base.OpAllReduce, 7, 0, 0, sigs), func(err error) bool {
			var me *base.MismatchError
			return errors.As(err, &me) && errors.Is(err, base.ErrMismatch) && reflect.DeepEqual(me.Signatures, sigs)
		}},
		{"peer", fakeRecord(codePeer, uint64(proto.PhaseReserve), base.OpBroadcast, 3, 0, proto.StatusWord(base.Failure{Kind: base.FailureLost, Culprit: 1}), sigs), func(err error) bool {
			var re *base.RankError
			return errors.As(err, &re) && re.Rank == 1 && errors.Is(err, base.ErrPeerLost)
		}},
		// A peer's timeout or mismatch is the same error type on every rank
		// (base.Failure.Err); the status word carries only its kind and
		// culprit, the rendezvous the rest (refresh).
		{"peer's peer", fakeRecord(codePeer, uint64(proto.PhaseReserve), base.OpBroadcast, 3, 0, proto.StatusWord(base.Failure{Kind: base.FailureMismatch, Culprit: 0}), sigs), func(err error) bool {
			var me *base.MismatchError
			return errors.As(err, &me) && errors.Is(err, base.ErrMismatch)
		}},
		{"abort by a peer", fakeRecord(codeAbort, uint64(proto.PhaseReady), base.OpAllReduce, 3, 0, proto.StatusWord(base.Failure{Kind: base.FailureTimeout, Culprit: 1}), sigs), func(err error) bool {
			var te *base.TimeoutError
			return errors.As(err, &te) && errors.Is(err, base.ErrTimeout)
		}},
		{"own abort", fakeRecord(codeAbort, uint64(proto.PhaseReady), base.OpAllReduce, 3, 0, proto.StatusWord(base.Failure{Kind: base.FailureLost, Culprit: 0}), sigs), func(err error) bool {
			return errors.Is(err, base.ErrAborted)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := decodeRecord(tc.mem, 2)
			if !ok {
				t.Fatal("record not valid")
			}
			if err := r.err(0, timeout); !tc.check(err) {
				t.Errorf("got %v (%T)", err, err)
			}
		})
	}
}
