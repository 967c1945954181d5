package store

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"
)

// The handshake, before any other frame:
//
//	server: challenge{version, Ns}
//	client: hello{version, rank, world, Nc, HMAC(secret, client label, version, rank, world, Ns, Nc)}
//	server: welcome{HMAC(secret, server label, ...same...), failed, cause} or refuse{reason}
//
// Ns and Nc are 32 bytes from crypto/rand. The client proves the secret
// first, so a stranger learns nothing (not even the world size) before it
// is refused; then the server proves it, so a rank never trusts a fake
// server. The two labels differ, so neither proof can be replayed as the
// other; fresh nonces on both sides stop replays from old connections.
// Proofs are compared with hmac.Equal. Everything after the handshake is
// trusted as coming from the authenticated peer (the connection is not
// encrypted).
const (
	protoVersion = 1

	clientLabel = "detcoll/store client proof v1"
	serverLabel = "detcoll/store server proof v1"

	// defaultHandshakeTimeout bounds a handshake on both sides, so a silent
	// client cannot hold a connection slot on the server.
	defaultHandshakeTimeout = 10 * time.Second
)

// proof is the MAC one side sends; label says which side.
func proof(secret []byte, label string, rank, world uint32, serverNonce, clientNonce [32]byte) [32]byte {
	h := hmac.New(sha256.New, secret)
	b := make([]byte, 0, len(label)+1+8+64)
	b = append(b, label...)
	b = append(b, protoVersion)
	b = binary.BigEndian.AppendUint32(b, rank)
	b = binary.BigEndian.AppendUint32(b, world)
	b = append(b, serverNonce[:]...)
	b = append(b, clientNonce[:]...)
	h.Write(b)
	var mac [32]byte
	h.Sum(mac[:0])
	return mac
}

func nonce() [32]byte {
	var n [32]byte
	_, _ = rand.Read(n[:]) // crypto/rand.Read never fails; it crashes the program instead
	return n
}

// readMsg reads one frame of at most limit body bytes and decodes it.
func readMsg(r io.Reader, limit uint32) (msg, error) {
	b, err := readFrame(r, limit)
	if err != nil {
		return msg{}, err
	}
	return decode(b)
}

// greeting is a hello the server has verified.
type greeting struct {
	rank                     int
	serverNonce, clientNonce [32]byte
}

// serverHello runs the server's half up to a verified hello: the client
// knows the secret and claims a rank in range and the server's world size.
// A refusal is sent to the client and returned wrapping ErrAuth; I/O errors
// are returned as they are, with nothing sent. It reads exactly the hello's
// bytes, so r need not buffer, and a frame longer than a hello is refused
// from its length alone.
func serverHello(w io.Writer, r io.Reader, secret []byte, world int) (greeting, error) {
	g := greeting{serverNonce: nonce()}
	if _, err := w.Write(encode(msg{typ: tChallenge, version: protoVersion, nonce: g.serverNonce})); err != nil {
		return g, err
	}
	m, err := readMsg(r, maxHelloBody)
	if errors.Is(err, errMalformed) {
		return g, refuse(w, err.Error())
	}
	if err != nil {
		return g, err
	}
	if m.typ != tHello {
		return g, refuse(w, fmt.Sprintf("expected hello, got %v", m.typ))
	}
	if m.version != protoVersion {
		return g, refuse(w, fmt.Sprintf("protocol version %d, server speaks %d", m.version, protoVersion))
	}
	g.clientNonce = m.nonce
	want := proof(secret, clientLabel, m.rank, m.world, g.serverNonce, g.clientNonce)
	if !hmac.Equal(m.mac[:], want[:]) {
		return g, refuse(w, "bad proof: the secret differs")
	}
	if int64(m.world) != int64(world) {
		return g, refuse(w, fmt.Sprintf("world size %d, the job has %d", m.world, world))
	}
	if int64(m.rank) > int64(launcherRank(world)) {
		return g, refuse(w, fmt.Sprintf("rank %d out of range [0, %d)", m.rank, world))
	}
	g.rank = int(m.rank)
	return g, nil
}

// refuse tells the client why and returns the reason as an error matching
// ErrAuth. The reason is cut to maxReason, so the frame fits maxWelcomeBody.
func refuse(w io.Writer, reason string) error {
	reason = cutReason(reason)
	_, _ = w.Write(encode(msg{typ: tRefuse, reason: reason}))
	return fmt.Errorf("%w: %s", ErrAuth, reason)
}

// serverWelcome finishes the handshake: the server's proof and, when the
// job has already failed, its cause (whose reason failLocked has cut to
// maxReason).
func serverWelcome(w io.Writer, secret []byte, g greeting, world int, cause *PeerError) error {
	m := msg{typ: tWelcome, mac: proof(secret, serverLabel, uint32(g.rank), uint32(world), g.serverNonce, g.clientNonce)}
	if cause != nil {
		m.failed, m.rank, m.reason = true, uint32(cause.Rank), cause.Reason
	}
	_, err := w.Write(encode(m))
	return err
}

// clientHandshake runs the client's half. It returns the job's failure
// cause when the server says the job has already failed. A refusal, a bad
// server proof or an unexpected frame wraps ErrAuth; a connection closed
// before the challenge wraps errTurnedAway; other I/O errors are returned as
// they are. Until the server's proof is checked, frames are held to
// maxWelcomeBody.
func clientHandshake(w io.Writer, r io.Reader, secret []byte, rank, world int) (*PeerError, error) {
	m, err := readMsg(r, maxWelcomeBody)
	if errors.Is(err, errMalformed) {
		return nil, fmt.Errorf("%w: not a detcoll store: %v", ErrAuth, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		// io.EOF, not io.ErrUnexpectedEOF: not a byte came.
		return nil, fmt.Errorf("%w: %w", errTurnedAway, err)
	}
	if err != nil {
		return nil, err
	}
	if m.typ != tChallenge {
		return nil, fmt.Errorf("%w: expected challenge, got %v", ErrAuth, m.typ)
	}
	if m.version != protoVersion {
		return nil, fmt.Errorf("%w: server speaks protocol version %d, want %d", ErrAuth, m.version, protoVersion)
	}
	serverNonce, clientNonce := m.nonce, nonce()
	hello := msg{typ: tHello, version: protoVersion, rank: uint32(rank), world: uint32(world), nonce: clientNonce,
		mac: proof(secret, clientLabel, uint32(rank), uint32(world), serverNonce, clientNonce)}
	if _, err := w.Write(encode(hello)); err != nil {
		return nil, err
	}
	m, err = readMsg(r, maxWelcomeBody)
	if errors.Is(err, errMalformed) {
		return nil, fmt.Errorf("%w: not a detcoll store: %v", ErrAuth, err)
	}
	if err != nil {
		return nil, err
	}
	switch m.typ {
	case tWelcome:
	case tRefuse:
		return nil, fmt.Errorf("%w: server refused rank %d: %s", ErrAuth, rank, m.reason)
	default:
		return nil, fmt.Errorf("%w: expected welcome, got %v", ErrAuth, m.typ)
	}
	want := proof(secret, serverLabel, uint32(rank), uint32(world), serverNonce, clientNonce)
	if !hmac.Equal(m.mac[:], want[:]) {
		return nil, fmt.Errorf("%w: the server's proof is wrong: it does not know the secret", ErrAuth)
	}
	if m.failed {
		return &PeerError{Rank: int(m.rank), Reason: m.reason}, nil
	}
	return nil, nil
}
