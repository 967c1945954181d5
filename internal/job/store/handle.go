package store

import (
	"encoding/binary"
	"fmt"
)

// round is one gather in progress: the ranks that have arrived, their
// request ids and values.
type round struct {
	in     []bool
	seen   []bool // ranks that ever arrived, withdrawn or not: see missingLocked
	ids    []uint64
	values [][]byte
	n      int // ranks arrived
	size   int // body size of the gathered reply so far
}

// gatheredHead is the part of a gathered frame before its values' count:
// length, type and request id. It differs per rank; the rest is shared.
const gatheredHead = headLen + 1 + 8

// handleLocked serves one request of rank p. It never blocks: replies and
// pushes go to outboxes. An error is a protocol violation and ends p's
// connection, failing the job.
func (s *Server) handleLocked(p *peer, m msg) error {
	switch m.typ {
	case tSet:
		s.kv[m.key] = m.value
		for w := range s.waiters[m.key] {
			if q := s.peers[w.rank]; q != nil {
				delete(q.pending, w.id)
				q.out.send(encode(msg{typ: tValue, id: w.id, value: m.value}))
			}
		}
		delete(s.waiters, m.key)
		p.out.send(encode(msg{typ: tOK, id: m.id}))
	case tGet:
		if v, ok := s.kv[m.key]; ok {
			p.out.send(encode(msg{typ: tValue, id: m.id, value: v}))
			return nil
		}
		if s.waiters[m.key] == nil {
			s.waiters[m.key] = make(map[ref]struct{})
		}
		s.waiters[m.key][ref{p.rank, m.id}] = struct{}{}
		p.pending[m.id] = pendingOp{key: m.key}
	case tGather:
		s.gatherLocked(p, m)
	case tMissing:
		p.out.send(encode(msg{typ: tValue, id: m.id, value: s.missingLocked(p.rank, m.key)}))
	case tCancel:
		s.cancelLocked(p, m.id)
	case tFail:
		s.failLocked(&PeerError{Rank: p.rank, Reason: m.reason})
		p.out.send(encode(msg{typ: tOK, id: m.id}))
	default:
		return fmt.Errorf("%w: unexpected %v from rank %d", errMalformed, m.typ, p.rank)
	}
	return nil
}

func (s *Server) gatherLocked(p *peer, m msg) {
	if s.leaver >= 0 {
		p.out.send(encode(msg{typ: tError, id: m.id, code: codeClosed,
			reason: fmt.Sprintf("rank %d has closed its store client", s.leaver)}))
		return
	}
	rd := s.rounds[m.key]
	if rd == nil {
		rd = &round{in: make([]bool, s.world), seen: make([]bool, s.world), ids: make([]uint64, s.world), values: make([][]byte, s.world),
			size: gatheredHead - headLen + 4 + 4*s.world}
		s.rounds[m.key] = rd
	}
	if rd.in[p.rank] {
		p.out.send(encode(msg{typ: tError, id: m.id, code: codeInvalid,
			reason: fmt.Sprintf("rank %d is already waiting on this name", p.rank)}))
		return
	}
	rd.in[p.rank], rd.ids[p.rank], rd.values[p.rank] = true, m.id, m.value
	rd.seen[p.rank] = true
	rd.n++
	rd.size += len(m.value)
	p.pending[m.id] = pendingOp{key: m.key, gather: true}
	if rd.n < s.world {
		return
	}
	delete(s.rounds, m.key)
	if rd.size > maxFrame {
		for r, id := range rd.ids {
			if q := s.peers[r]; q != nil {
				delete(q.pending, id)
				q.out.send(encode(msg{typ: tError, id: id, code: codeInvalid,
					reason: fmt.Sprintf("the values total %d bytes with framing, over the %d-byte frame limit", rd.size, maxFrame)}))
			}
		}
		return
	}
	// One encoding for all ranks: only the request id differs.
	frame := encode(msg{typ: tGathered, values: rd.values})
	body := frame[gatheredHead:]
	for r, id := range rd.ids {
		if q := s.peers[r]; q != nil {
			delete(q.pending, id)
			head := make([]byte, gatheredHead)
			copy(head, frame)
			binary.BigEndian.PutUint64(head[headLen+1:], id)
			q.out.send(head, body)
		}
	}
}

// cancelLocked forgets a request whose caller stopped waiting. A gather
// arrival is withdrawn, so the rank may arrive again.
func (s *Server) cancelLocked(p *peer, id uint64) {
	op, ok := p.pending[id]
	if !ok {
		return // answered already
	}
	delete(p.pending, id)
	if !op.gather {
		delete(s.waiters[op.key], ref{p.rank, id})
		if len(s.waiters[op.key]) == 0 {
			delete(s.waiters, op.key)
		}
		return
	}
	if rd := s.rounds[op.key]; rd != nil && rd.in[p.rank] && rd.ids[p.rank] == id {
		rd.size -= len(rd.values[p.rank])
		rd.in[p.rank], rd.ids[p.rank], rd.values[p.rank] = false, 0, nil
		rd.n-- // the round stays, empty or not, to remember who came
	}
}

// forgetLocked cancels everything a departing rank waits on.
func (s *Server) forgetLocked(p *peer) {
	for id := range p.pending {
		s.cancelLocked(p, id)
	}
}

// abortRoundsLocked ends every gather in progress with an error: once a rank
// has left, none can complete.
func (s *Server) abortRoundsLocked(reason string) {
	for name, rd := range s.rounds {
		for r, id := range rd.ids {
			if q := s.peers[r]; q != nil && rd.in[r] {
				delete(q.pending, id)
				q.out.send(encode(msg{typ: tError, id: id, code: codeClosed, reason: reason}))
			}
		}
		delete(s.rounds, name)
	}
}

// missingLocked returns, as big-endian u32s, the ranks other than asker that
// never reached the gather key: what a rank whose wait there timed out
// reports as missing. A rank that came and withdrew (it timed out too) is
// not missing, so ranks that time out together blame the same ranks.
func (s *Server) missingLocked(asker int, key string) []byte {
	rd := s.rounds[key]
	var b []byte
	for r := range s.world {
		if r != asker && (rd == nil || !rd.seen[r]) {
			b = binary.BigEndian.AppendUint32(b, uint32(r))
		}
	}
	return b
}
