package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// samples holds a message of every type, with every field its type encodes set.
func samples() []msg {
	n := [32]byte{1, 2, 3, 31: 4}
	mac := [32]byte{9, 31: 8}
	return []msg{
		{typ: tChallenge, version: protoVersion, nonce: n},
		{typ: tHello, version: protoVersion, rank: 3, world: 8, nonce: n, mac: mac},
		{typ: tWelcome, mac: mac},
		{typ: tWelcome, mac: mac, failed: true, rank: 2, reason: "killed"},
		{typ: tRefuse, reason: "bad proof"},
		{typ: tSet, id: 1, key: "shm/0", value: []byte("/detcoll-42-0")},
		{typ: tGet, id: 2, key: "shm/1"},
		{typ: tGather, id: 3, key: "barrier/open"},
		{typ: tGather, id: 1 << 60, key: "allgather/ipc", value: []byte{0, 1, 2}},
		{typ: tCancel, id: 4},
		{typ: tFail, id: 5, reason: "out of memory"},
		{typ: tBye},
		{typ: tOK, id: 6},
		{typ: tValue, id: 7, value: []byte("v")},
		{typ: tValue, id: 7},
		{typ: tGathered, id: 8, values: [][]byte{[]byte("a"), nil, []byte("ccc")}},
		{typ: tGathered, id: 8},
		{typ: tError, id: 9, code: codeClosed, reason: "rank 1 has closed"},
		{typ: tFailed, rank: 0, reason: "the store server closed"},
		{typ: tByeAck},
		{typ: tMissing, id: 10, key: "barrier/open"},
		{typ: tPing},
		{typ: tProc, value: []byte(`{"pid":7}`)},
	}
}

func TestRoundTrip(t *testing.T) {
	seen := map[msgType]bool{}
	for _, m := range samples() {
		seen[m.typ] = true
		got, err := decode(encode(m))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
	}
	for typ := tChallenge; typ < tLimit; typ++ {
		if !seen[typ] {
			t.Errorf("no sample of %v", typ)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	frame := func(body ...byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	set := encode(msg{typ: tSet, id: 1, key: "k", value: []byte("v")})
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"only a length", []byte{0, 0, 0, 1}},
		{"length too long", append([]byte{0, 0, 0, 9}, set[4:]...)},
		{"length too short", append([]byte{0, 0, 0, 2}, set[4:]...)},
		{"over the limit", append(binary.BigEndian.AppendUint32(nil, maxFrame+1), make([]byte, maxFrame+1)...)},
		{"unknown type", frame(byte(tLimit))},
		{"type zero", frame(0)},
		{"truncated", frame(set[4 : len(set)-1]...)},
		{"trailing byte", frame(append(append([]byte{}, set[4:]...), 0)...)},
		{"string past the end", frame(byte(tRefuse), 0, 0, 0, 5, 'a')},
		{"length overflowing int32", frame(byte(tRefuse), 0xff, 0xff, 0xff, 0xff)},
		{"list count past the end", frame(append([]byte{byte(tGathered), 0, 0, 0, 0, 0, 0, 0, 1}, 0xff, 0xff, 0xff, 0xff)...)},
		{"bool 2", frame(append(append([]byte{byte(tWelcome)}, make([]byte, 32)...), 2, 0, 0, 0, 0, 0, 0, 0, 0)...)},
		{"short nonce", frame(byte(tChallenge), 1, 2, 3)},
	}
	for _, tt := range tests {
		if m, err := decode(tt.b); !errors.Is(err, errMalformed) {
			t.Errorf("%s: decode = %+v, %v; want errMalformed", tt.name, m, err)
		}
	}
}

func TestReadFrame(t *testing.T) {
	set := encode(msg{typ: tSet, id: 1, key: "k"})
	stream := append(append([]byte{}, set...), set...)
	r := bytes.NewReader(stream)
	for i := range 2 {
		if b, err := readFrame(r, maxFrame); err != nil || !bytes.Equal(b, set) {
			t.Fatalf("frame %d = %x, %v; want %x", i, b, err, set)
		}
	}
	if _, err := readFrame(r, maxFrame); err != io.EOF {
		t.Errorf("at the end: %v; want io.EOF", err)
	}
	if _, err := readFrame(bytes.NewReader(set[:len(set)-1]), maxFrame); err != io.ErrUnexpectedEOF {
		t.Errorf("cut frame: %v; want io.ErrUnexpectedEOF", err)
	}
	// An oversized length is refused from the header alone: the reader
	// holds nothing more, so any read of the body would fail differently.
	tests := []struct {
		limit uint32
		n     []uint32
	}{
		{maxFrame, []uint32{0, maxFrame + 1, 1<<32 - 1}},
		{maxHelloBody, []uint32{0, maxHelloBody + 1, maxFrame}},
		{maxWelcomeBody, []uint32{maxWelcomeBody + 1, maxFrame}},
	}
	for _, tt := range tests {
		for _, n := range tt.n {
			if _, err := readFrame(bytes.NewReader(binary.BigEndian.AppendUint32(nil, n)), tt.limit); !errors.Is(err, errMalformed) {
				t.Errorf("length %d, limit %d: %v; want errMalformed", n, tt.limit, err)
			}
		}
	}
}

// TestHandshakeLimits: the pre-authentication limits are the sizes of the
// handshake's largest frames, so every real handshake frame passes them.
func TestHandshakeLimits(t *testing.T) {
	long := strings.Repeat("x", maxReason)
	var n [32]byte
	tests := []struct {
		m     msg
		limit int
		exact bool // the frame is the largest of its kind: it sets the limit
	}{
		{msg{typ: tHello, version: protoVersion, rank: 1<<32 - 1, world: 1<<32 - 1, nonce: n, mac: n}, maxHelloBody, true},
		{msg{typ: tWelcome, mac: n, failed: true, rank: 1<<32 - 1, reason: long}, maxWelcomeBody, true},
		{msg{typ: tChallenge, version: protoVersion, nonce: n}, maxWelcomeBody, false},
		{msg{typ: tRefuse, reason: long}, maxWelcomeBody, false},
	}
	for _, tt := range tests {
		frame := encode(tt.m)
		body := len(frame) - headLen
		if body > tt.limit || tt.exact && body != tt.limit {
			t.Errorf("%v: body of %d bytes; the limit is %d", tt.m.typ, body, tt.limit)
		}
		if _, err := readFrame(bytes.NewReader(frame), uint32(tt.limit)); err != nil {
			t.Errorf("%v: readFrame with limit %d: %v", tt.m.typ, tt.limit, err)
		}
	}
	if got := cutReason(long + "y"); got != long {
		t.Errorf("cutReason kept %d bytes; want %d", len(got), maxReason)
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range samples() {
		f.Add(encode(m))
	}
	f.Add([]byte{0, 0, 0, 1, byte(tBye)})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decode(b)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("decode error %v does not match errMalformed", err)
			}
			return
		}
		// One encoding per message: encode gives back the input.
		again := encode(m)
		if !bytes.Equal(again, b) {
			t.Fatalf("encode(decode(%x)) = %x", b, again)
		}
		m2, err := decode(again)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", m, m2, err)
		}
	})
}
