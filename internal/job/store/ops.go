package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// Set stores value under key, replacing any earlier value, and wakes the
// Gets waiting for it. It waits until the server has stored it, so a Get that
// starts later, on any rank, sees it. value is copied before Set returns.
// Keys are 1 to 1024 bytes, values at most 64 KiB.
func (c *Client) Set(ctx context.Context, key string, value []byte) error {
	op := fmt.Sprintf("set %q", key)
	if err := checkKey(op, key); err != nil {
		return err
	}
	if len(value) > maxValue {
		return fmt.Errorf("%w: %s: value of %d bytes, the limit is %d", ErrInvalid, op, len(value), maxValue)
	}
	_, err := c.call(ctx, op, msg{typ: tSet, key: key, value: value})
	return err
}

// Get returns the value of key, waiting on the server until some rank has
// set it, ctx is done (an error matching ctx's), or the job fails (its
// *PeerError). An empty value reads as nil. The caller owns the result.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	op := fmt.Sprintf("get %q", key)
	if err := checkKey(op, key); err != nil {
		return nil, err
	}
	m, err := c.call(ctx, op, msg{typ: tGet, key: key})
	return m.value, err
}

// Barrier waits until all ranks have called Barrier with name, ctx is done,
// or the job fails. A name may be reused once its barrier is passed. It fails
// with ErrClosed once any rank has closed its client, as the barrier could
// never complete.
func (c *Client) Barrier(ctx context.Context, name string) error {
	op := fmt.Sprintf("barrier %q", name)
	if err := checkKey(op, name); err != nil {
		return err
	}
	_, err := c.call(ctx, op, msg{typ: tGather, key: "barrier/" + name})
	return err
}

// AllGather contributes value and returns every rank's value, indexed by
// rank, once all ranks have called AllGather with name; it waits like
// Barrier. Empty values read as nil. The values together may not exceed the
// 1 MiB frame (with 4 bytes per rank of framing), or every rank gets an
// error matching ErrInvalid. The caller owns the result.
func (c *Client) AllGather(ctx context.Context, name string, value []byte) ([][]byte, error) {
	op := fmt.Sprintf("allgather %q", name)
	if err := checkKey(op, name); err != nil {
		return nil, err
	}
	if len(value) > maxValue {
		return nil, fmt.Errorf("%w: %s: value of %d bytes, the limit is %d", ErrInvalid, op, len(value), maxValue)
	}
	m, err := c.call(ctx, op, msg{typ: tGather, key: "allgather/" + name, value: value})
	if err == nil && len(m.values) != c.world {
		// The server is broken; treat it as lost, as the reader would.
		c.lost(fmt.Errorf("%w: %d values gathered, world size %d", errMalformed, len(m.values), c.world))
		return nil, c.Err()
	}
	return m.values, err
}

// BarrierMissing returns the ranks other than this one that have not
// reached the barrier called name, in rank order: after a Barrier that ctx
// ended, the ranks to blame. Like every call, it fails when the job has
// failed.
func (c *Client) BarrierMissing(ctx context.Context, name string) ([]int, error) {
	return c.missing(ctx, "barrier", name)
}

// AllGatherMissing is BarrierMissing for the AllGather called name.
func (c *Client) AllGatherMissing(ctx context.Context, name string) ([]int, error) {
	return c.missing(ctx, "allgather", name)
}

func (c *Client) missing(ctx context.Context, kind, name string) ([]int, error) {
	op := fmt.Sprintf("missing %s %q", kind, name)
	if err := checkKey(op, name); err != nil {
		return nil, err
	}
	m, err := c.call(ctx, op, msg{typ: tMissing, key: kind + "/" + name})
	if err != nil {
		return nil, err
	}
	if len(m.value)%4 != 0 {
		c.lost(fmt.Errorf("%w: a list of ranks of %d bytes", errMalformed, len(m.value)))
		return nil, c.Err()
	}
	ranks := make([]int, 0, len(m.value)/4)
	for b := m.value; len(b) > 0; b = b[4:] {
		ranks = append(ranks, int(binary.BigEndian.Uint32(b)))
	}
	return ranks, nil
}

func checkKey(op, key string) error {
	if len(key) == 0 || len(key) > maxKey {
		return fmt.Errorf("%w: %s: key of %d bytes, want 1 to %d", ErrInvalid, op, len(key), maxKey)
	}
	return nil
}

// call sends a request and waits for its reply, the job's failure, Close or
// ctx. When ctx ends first the server is told to forget the request.
func (c *Client) call(ctx context.Context, op string, m msg) (msg, error) {
	if err := c.usable(op); err != nil {
		return msg{}, err
	}
	if err := ctx.Err(); err != nil {
		return msg{}, fmt.Errorf("detcoll/store: %s: %w", op, err)
	}
	m.id = c.nextID.Add(1)
	reply := make(chan msg, 1)
	c.mu.Lock()
	c.pending[m.id] = reply
	c.mu.Unlock()
	if !c.out.send(encode(m)) {
		// A write failed: the connection is broken (or Close stopped the
		// writer, and then the closing case below wins).
		c.lost(errors.New("writing to the store server failed"))
	}
	select {
	case r := <-reply:
		return r, replyErr(op, r)
	case <-c.done:
		c.forget(m.id)
		return msg{}, c.Err()
	case <-c.closing:
		c.forget(m.id)
		return msg{}, fmt.Errorf("detcoll/store: %s: %w", op, ErrClosed)
	case <-ctx.Done():
		c.forget(m.id)
		c.out.send(encode(msg{typ: tCancel, id: m.id}))
		return msg{}, fmt.Errorf("detcoll/store: %s: %w", op, ctx.Err())
	}
}

// usable returns the job's failure or ErrClosed, or nil.
func (c *Client) usable(op string) error {
	if err := c.Err(); err != nil {
		return err
	}
	select {
	case <-c.closing:
		return fmt.Errorf("detcoll/store: %s: %w", op, ErrClosed)
	default:
		return nil
	}
}

func replyErr(op string, r msg) error {
	if r.typ != tError {
		return nil
	}
	switch r.code {
	case codeClosed:
		return fmt.Errorf("detcoll/store: %s: %s: %w", op, r.reason, ErrClosed)
	default:
		return fmt.Errorf("detcoll/store: %s: %s: %w", op, r.reason, ErrInvalid)
	}
}
