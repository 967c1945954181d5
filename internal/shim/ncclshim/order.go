package ncclshim

import "fmt"

// NCCL orders the operations of one communicator whatever streams the
// caller queues them on: each is launched after the previous one, the
// streams joined by events, without the host waiting. PyTorch relies on
// it (its asynchronous collectives go to the process group's stream, the
// synchronous ones to the current stream, interleaved without a wait in
// between), and so does vLLM, which passes whatever stream is current.
// detcoll's calls of one communicator share its staging and its sequence
// words, so they must run in the order they were queued: a call on
// another stream than the last one first makes its stream wait for the
// last one's work so far.

// follow orders the next call of c, on stream, after c's last call and
// makes stream the last; c.mu is held.
func (s *Shim) follow(c *comm, stream uintptr) error {
	if c.queued && c.last != stream {
		if err := s.dev.Follow(stream, c.last); err != nil {
			return fmt.Errorf("detcoll: order the call on stream %#x after the communicator's last one on %#x: %w", stream, c.last, err)
		}
	}
	c.last, c.queued = stream, true
	return nil
}
