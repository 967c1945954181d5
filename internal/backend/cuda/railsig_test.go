package cuda

import (
	"encoding/binary"
	"errors"
	"maps"
	"regexp"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// TestRailArgsLayout: railArgs has treesum.cu's RailArgs layout (the
// signature's words, two addresses, the hosts and a pad), and the
// signature's sequence is its last word, which dc_rail_sign draws.
func TestRailArgsLayout(t *testing.T) {
	var a railArgs
	if got, want := unsafe.Sizeof(a), uintptr(8*proto.SignatureWords+8+8+4+4); got != want {
		t.Errorf("railArgs is %d bytes, want %d", got, want)
	}
	if got, want := unsafe.Offsetof(a.Dev), uintptr(8*proto.SignatureWords); got != want {
		t.Errorf("railArgs.Dev at %d, want %d", got, want)
	}
	if got, want := unsafe.Offsetof(a.Hosts), uintptr(8*proto.SignatureWords+16); got != want {
		t.Errorf("railArgs.Hosts at %d, want %d", got, want)
	}
	w := proto.EncodeSignature(base.Signature{Seq: 0x5e})
	if w[proto.SignatureWords-1] != 0x5e {
		t.Errorf("the sequence is not the signature's last word: %x", w)
	}
	if railAll < railMine+railSigBytes || railRecSigs < railOp+8 {
		t.Errorf("the rail's offsets overlap: mine %d all %d (%d bytes a signature); op %d sigs %d", railMine, railAll, railSigBytes, railOp, railRecSigs)
	}
}

// TestRailOffsetsMatchTheKernel: treesum.cu's DC_RAIL_* are railsig.go's
// offsets (written twice: the generated header would change the key of
// the kernels built ahead of time, which treesum.cu is not part of).
func TestRailOffsetsMatchTheKernel(t *testing.T) {
	src, err := kernelDir.ReadFile("kernels/treesum.cu")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"DC_RAIL_MINE": railMine, "DC_RAIL_ALL": railAll, "DC_RAIL_ARRIVED": railArrived,
		"DC_RAIL_CHECKED": railChecked, "DC_RAIL_CODE": railCode, "DC_RAIL_SEQ": railSeq, "DC_RAIL_OP": railOp,
		"DC_RAIL_SIGS": railRecSigs}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define (DC_RAIL_\w+) (\d+)$`).FindAllSubmatch(src, -1) {
		v, _ := strconv.Atoi(string(m[2]))
		got[string(m[1])] = v
	}
	if !maps.Equal(got, want) {
		t.Errorf("treesum.cu defines %v; railsig.go has %v", got, want)
	}
}

// railRecord is a record of the rail's check in Go memory, for hosts.
func railRecord(hosts int) *railSigs {
	words := make([]uint64, (railRecSigs+hosts*railSigBytes)/8)
	return &railSigs{hosts: hosts, view: unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8*len(words))}
}

// TestRailMismatch: a record without the code is no mismatch; with it,
// every rank's signature, each host's ranks with their host's.
func TestRailMismatch(t *testing.T) {
	r := railRecord(3)
	if err := r.mismatch(2); err != nil {
		t.Fatalf("an empty record: %v", err)
	}
	for h := range 3 {
		w := proto.EncodeSignature(base.Signature{Op: base.OpAllReduce, Count: uint64(100 + h%2), Seq: 7})
		for k, v := range w {
			binary.LittleEndian.PutUint64(r.view[railRecSigs+h*railSigBytes+8*k:], v)
		}
	}
	r.word(railCode).Store(1)
	var me *base.MismatchError
	if err := r.mismatch(2); !errors.As(err, &me) || len(me.Signatures) != 6 {
		t.Fatalf("mismatch = %v; want a *MismatchError of 6 ranks", err)
	}
	for p, s := range me.Signatures {
		if want := uint64(100 + (p/2)%2); s.Count != want || s.Seq != 7 {
			t.Errorf("rank %d: %+v; want count %d, seq 7", p, s, want)
		}
	}
}

// TestRailStuck: a call signed and not checked is a timeout only after
// the timeout has passed with no check in between; checks that keep up,
// or lag by a call while progressing, are not.
func TestRailStuck(t *testing.T) {
	r := railRecord(2)
	const timeout = 30 * time.Millisecond
	set := func(arrived, checked uint64) {
		r.word(railArrived).Store(arrived)
		r.word(railChecked).Store(checked)
	}
	set(5, 5)
	if err := r.stuck(timeout, 0); err != nil {
		t.Fatalf("all checked: %v", err)
	}
	for i := range uint64(10) { // pipelined calls, a check behind, progressing
		set(6+i, 5+i)
		time.Sleep(timeout / 5)
		if err := r.stuck(timeout, 0); err != nil {
			t.Fatalf("progressing, at %d: %v", i, err)
		}
	}
	set(20, 14) // the gather of call 15 never ends
	r.stuck(timeout, 0)
	time.Sleep(2 * timeout)
	var te *base.TimeoutError
	if err := r.stuck(timeout, 0); !errors.As(err, &te) || te.Seq != 15 {
		t.Fatalf("stuck for twice the timeout: %v; want a *TimeoutError of call 15", err)
	}
}
