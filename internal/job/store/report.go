package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// The launcher's report. A rank that dies before it joined the store (killed
// a few milliseconds after it started, say) is invisible to the others: they
// wait for it until their timeout. Its launcher sees it die, and knows the
// job's address and secret (it made them), so it tells the store: it
// authenticates as the job's one extra member, rank == world, sends the dead
// rank and why, and the store fails the job with that cause at once. When
// nothing listens (rank 0 itself died, or has not listened yet), the
// launcher hosts a store at the address in its place, already failed, which
// tells every rank the cause as it joins.

// launcherRank is the rank a launcher authenticates as: world, one past the
// last rank, so that the proof binds it and no rank can claim it.
func launcherRank(world int) int { return world }

// ErrNoServer matches a Report that found nothing listening at the address.
var ErrNoServer = errors.New("detcoll/store: no store server listening")

// Report tells the store at addr, as the job's launcher, that rank failed
// for reason: the job fails with that cause on every rank, joined or not.
// It returns an error matching ErrNoServer when nothing listens at addr
// (see Tombstone), ErrAuth when the store refuses the secret, and ctx's
// error if ctx ends first.
func Report(ctx context.Context, addr string, world int, secret []byte, rank int, reason string) error {
	if err := checkJob(world, secret); err != nil {
		return err
	}
	if rank < 0 || rank >= world {
		return fmt.Errorf("%w: rank %d out of range [0, %d)", ErrInvalid, rank, world)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w at %s", ErrNoServer, addr)
	}
	if err != nil {
		return fmt.Errorf("detcoll/store: report to %s: %w", addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(defaultHandshakeTimeout))
	cause, err := clientHandshake(conn, conn, secret, launcherRank(world), world)
	if err == nil && cause != nil {
		return nil // the job had failed already: its cause stands
	}
	if err == nil {
		_, err = conn.Write(encode(msg{typ: tFailed, rank: uint32(rank), reason: cutReason(reason)}))
	}
	if err == nil {
		var m msg
		if m, err = readMsg(conn, maxWelcomeBody); err == nil && m.typ != tByeAck {
			err = fmt.Errorf("%w: expected bye-ack, got %v", errMalformed, m.typ)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("detcoll/store: report to %s: %w", addr, err)
	}
	return nil
}

// Tombstone hosts a store at addr for a job that has already failed because
// rank did, for reason: every rank that joins is told so. The launcher calls
// it when Report finds no server, and closes it when the job is over.
func Tombstone(addr string, world int, secret []byte, rank int, reason string) (*Server, error) {
	s, err := Listen(addr, world, secret)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.failLocked(&PeerError{Rank: rank, Reason: reason})
	s.buryLocked(rank)
	s.mu.Unlock()
	return s, nil
}

// buryLocked records that the launcher saw rank die: it will never come to
// hear the job's cause, so Shutdown must not wait for it to.
func (s *Server) buryLocked(rank int) {
	if !s.told[rank] {
		s.told[rank] = true
		s.signalLocked()
	}
}

// serveLauncher takes a launcher's report (see Report) on a connection whose
// hello the server verified, and closes it.
func (s *Server) serveLauncher(conn net.Conn, g greeting) {
	s.mu.Lock()
	cause := s.cause
	s.mu.Unlock()
	if serverWelcome(conn, s.secret, g, s.world, cause) != nil || cause != nil {
		return
	}
	m, err := readMsg(conn, maxWelcomeBody)
	if err != nil || m.typ != tFailed || int64(m.rank) >= int64(s.world) {
		return
	}
	s.mu.Lock()
	s.failLocked(&PeerError{Rank: int(m.rank), Reason: m.reason})
	s.buryLocked(int(m.rank))
	s.mu.Unlock()
	_, _ = conn.Write(encode(msg{typ: tByeAck}))
}
