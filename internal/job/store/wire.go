package store

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Frame: a big-endian u32 body length, then the body: one msgType byte and
// that type's fields, in the order of the table below. Integers are
// big-endian; a string or byte field is a u32 length and the bytes; a list is
// a u32 count and that many byte fields; nonces and MACs are 32 bytes with no
// length; a bool is one byte, 0 or 1. Decoding rejects trailing bytes, so each
// message has exactly one encoding.
const (
	maxFrame = 1 << 20 // largest body, checked before allocating
	headLen  = 4       // the length prefix

	maxKey    = 1 << 10  // key and name bytes
	maxValue  = 64 << 10 // value bytes
	maxReason = 1 << 10  // reason bytes (Fail, a job's cause, a refusal); longer ones are cut

	// Before the peer has proved the secret, a reader accepts only the
	// handshake's frames, whose sizes are fixed or bounded (auth.go), so a
	// stranger cannot make it allocate more.
	//
	// maxHelloBody is the hello, all the server reads before the proof:
	// type, version, rank, world, nonce, mac.
	maxHelloBody = 1 + 1 + 4 + 4 + 32 + 32
	// maxWelcomeBody is the largest frame a client reads before the
	// server's proof: the welcome (type, mac, failed, rank, reason). The
	// challenge (34 bytes) and a refusal (5 + reason) are no larger.
	maxWelcomeBody = 1 + 32 + 1 + 4 + 4 + maxReason
)

type msgType uint8

const (
	// Handshake, see auth.go.
	tChallenge msgType = iota + 1 // server: version, nonce
	tHello                        // client: version, rank, world, nonce, mac
	tWelcome                      // server: mac, failed, rank, reason (the cause when failed)
	tRefuse                       // server: reason; the server then closes

	// Requests, client to server. Each but cancel and bye gets one reply with its id.
	tSet    // id, key, value -> ok
	tGet    // id, key -> value, once the key exists
	tGather // id, key, value -> gathered, once every rank has sent the key
	tCancel // id: the caller stopped waiting
	tFail   // id, reason -> ok, after the failure is broadcast
	tBye    // the goodbye -> byeAck, then the server closes

	// Replies and pushes, server to client.
	tOK       // id
	tValue    // id, value
	tGathered // id, values by rank
	tError    // id, code, reason
	tFailed   // rank, reason: the job failed (a push, no id)
	tByeAck   //

	// Added in the same protocol version: a server that predates it
	// treats it as a protocol error, which only a late question risks.
	tMissing // id, key -> value (u32 ranks): who has not reached a gather

	// Either way, no fields and no reply: the sender is alive (liveness.go).
	tPing

	// Either way, once, right after the handshake: value is the sender's
	// process identity (JSON, package proc), so that ranks of one machine
	// watch each other's processes (procwatch.go). No reply.
	tProc

	tLimit // first unused type
)

// Codes of tError.
const (
	codeClosed  = 1 // a rank has closed: a gather can never complete
	codeInvalid = 2 // the request is wrong: a rank waiting twice on one name, a gather too large
)

// msg is a decoded frame. Only the fields of its type are encoded; the others
// are zero after decode.
type msg struct {
	typ     msgType
	id      uint64
	version uint8
	rank    uint32
	world   uint32
	nonce   [32]byte
	mac     [32]byte
	failed  bool
	code    uint8
	key     string
	reason  string
	value   []byte   // nil when empty
	values  [][]byte // a nil element when empty
}

func (t msgType) String() string {
	names := [...]string{"challenge", "hello", "welcome", "refuse", "set", "get", "gather", "cancel",
		"fail", "bye", "ok", "value", "gathered", "error", "failed", "bye-ack", "missing", "ping", "proc"}
	if t >= 1 && t < tLimit {
		return names[t-1]
	}
	return fmt.Sprintf("type %d", uint8(t))
}

// encode returns m's frame, length prefix included. Callers keep fields within
// the limits above, so the body fits maxFrame; encode itself never fails.
func encode(m msg) []byte {
	n := headLen + 1 + 8 + 4 + 32 + 32 + 16 + len(m.key) + len(m.reason) + len(m.value)
	for _, v := range m.values {
		n += 4 + len(v)
	}
	b := make([]byte, headLen, n)
	b = append(b, byte(m.typ))
	be := binary.BigEndian
	switch m.typ {
	case tChallenge:
		b = append(b, m.version)
		b = append(b, m.nonce[:]...)
	case tHello:
		b = append(b, m.version)
		b = be.AppendUint32(b, m.rank)
		b = be.AppendUint32(b, m.world)
		b = append(b, m.nonce[:]...)
		b = append(b, m.mac[:]...)
	case tWelcome:
		b = append(b, m.mac[:]...)
		b = append(b, boolByte(m.failed))
		b = be.AppendUint32(b, m.rank)
		b = appendBytes(b, m.reason)
	case tRefuse:
		b = appendBytes(b, m.reason)
	case tSet, tGather:
		b = be.AppendUint64(b, m.id)
		b = appendBytes(b, m.key)
		b = appendBytes(b, m.value)
	case tGet, tMissing:
		b = be.AppendUint64(b, m.id)
		b = appendBytes(b, m.key)
	case tCancel, tOK:
		b = be.AppendUint64(b, m.id)
	case tFail:
		b = be.AppendUint64(b, m.id)
		b = appendBytes(b, m.reason)
	case tValue:
		b = be.AppendUint64(b, m.id)
		b = appendBytes(b, m.value)
	case tProc:
		b = appendBytes(b, m.value)
	case tGathered:
		b = be.AppendUint64(b, m.id)
		b = be.AppendUint32(b, uint32(len(m.values)))
		for _, v := range m.values {
			b = appendBytes(b, v)
		}
	case tError:
		b = be.AppendUint64(b, m.id)
		b = append(b, m.code)
		b = appendBytes(b, m.reason)
	case tFailed:
		b = be.AppendUint32(b, m.rank)
		b = appendBytes(b, m.reason)
	}
	be.PutUint32(b, uint32(len(b)-headLen))
	return b
}

func appendBytes[T string | []byte](b []byte, v T) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// cutReason cuts a reason to maxReason bytes.
func cutReason(reason string) string {
	if len(reason) > maxReason {
		return reason[:maxReason]
	}
	return reason
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// decode parses one whole frame, length prefix included. It never panics and
// allocates no more than len(b): every length is checked against the bytes
// left before use. Errors match errMalformed.
func decode(b []byte) (msg, error) {
	if len(b) < headLen+1 {
		return msg{}, fmt.Errorf("%w: %d bytes", errMalformed, len(b))
	}
	if n := binary.BigEndian.Uint32(b); n > maxFrame || int(n) != len(b)-headLen {
		return msg{}, fmt.Errorf("%w: length %d for a %d-byte body", errMalformed, n, len(b)-headLen)
	}
	m := msg{typ: msgType(b[headLen])}
	r := fields{b: b[headLen+1:]}
	switch m.typ {
	case tChallenge:
		m.version = r.u8()
		m.nonce = r.b32()
	case tHello:
		m.version = r.u8()
		m.rank = r.u32()
		m.world = r.u32()
		m.nonce = r.b32()
		m.mac = r.b32()
	case tWelcome:
		m.mac = r.b32()
		m.failed = r.bool()
		m.rank = r.u32()
		m.reason = string(r.bytes())
	case tRefuse:
		m.reason = string(r.bytes())
	case tSet, tGather:
		m.id = r.u64()
		m.key = string(r.bytes())
		m.value = r.bytes()
	case tGet, tMissing:
		m.id = r.u64()
		m.key = string(r.bytes())
	case tCancel, tOK:
		m.id = r.u64()
	case tFail:
		m.id = r.u64()
		m.reason = string(r.bytes())
	case tValue:
		m.id = r.u64()
		m.value = r.bytes()
	case tProc:
		m.value = r.bytes()
	case tGathered:
		m.id = r.u64()
		m.values = r.list()
	case tError:
		m.id = r.u64()
		m.code = r.u8()
		m.reason = string(r.bytes())
	case tFailed:
		m.rank = r.u32()
		m.reason = string(r.bytes())
	case tBye, tByeAck, tPing:
	default:
		return msg{}, fmt.Errorf("%w: unknown %v", errMalformed, m.typ)
	}
	if r.err != nil {
		return msg{}, fmt.Errorf("%w: %v: %v", errMalformed, m.typ, r.err)
	}
	if len(r.b) != 0 {
		return msg{}, fmt.Errorf("%w: %v: %d trailing bytes", errMalformed, m.typ, len(r.b))
	}
	return m, nil
}

// fields reads a body front to back. After the first short read every method
// returns zero and err says why.
type fields struct {
	b   []byte
	err error
}

func (r *fields) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) { // n < 0: a u32 length that overflowed int
		r.err = fmt.Errorf("field of %d bytes, %d left", n, len(r.b))
		return nil
	}
	v := r.b[:n:n] // capped, so appending to one value cannot overwrite the next
	r.b = r.b[n:]
	return v
}

func (r *fields) u8() uint8 {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *fields) bool() bool {
	v := r.u8()
	if v > 1 && r.err == nil {
		r.err = fmt.Errorf("bool byte %d", v)
	}
	return v == 1
}

func (r *fields) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *fields) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (r *fields) b32() (v [32]byte) {
	copy(v[:], r.take(32))
	return v
}

// bytes reads a length-prefixed field; empty reads as nil.
func (r *fields) bytes() []byte {
	n := r.u32()
	if v := r.take(int(n)); len(v) > 0 {
		return v
	}
	return nil
}

func (r *fields) list() [][]byte {
	n := r.u32()
	if r.err == nil && uint64(n) > uint64(len(r.b))/4 {
		r.err = fmt.Errorf("list of %d, %d bytes left", n, len(r.b))
	}
	if r.err != nil || n == 0 {
		return nil
	}
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = r.bytes()
	}
	return vs
}

// readFrame reads one frame of at most limit body bytes (maxFrame, or a
// handshake limit before the peer is authenticated) and returns it whole,
// for decode. A longer length is refused from the header alone, before
// anything is allocated. A clean end of stream between frames returns io.EOF.
func readFrame(r io.Reader, limit uint32) ([]byte, error) {
	var head [headLen]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n == 0 || n > limit {
		return nil, fmt.Errorf("%w: frame length %d, the limit is %d", errMalformed, n, limit)
	}
	b := make([]byte, headLen+int(n))
	copy(b, head[:])
	if _, err := io.ReadFull(r, b[headLen:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}
