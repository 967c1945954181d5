package store

import (
	"net"
	"sync"
	"time"
)

// keepAlive finds a peer host that vanished without closing its sockets
// (power loss, a cut cable) in Idle + Interval*Count, about 8 s. A dead
// process needs no keepalive: its kernel closes the socket at once.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: time.Second, Count: 3}

// tune sets TCP_NODELAY, so a failure push leaves at once instead of waiting
// for Nagle's algorithm, and keepalive.
func tune(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAliveConfig(keepAlive)
	}
}

// outbox is a connection's single writer: a goroutine that writes queued
// frames in order, one write each, as soon as they are queued. Senders never
// block, so the server can push to every rank while holding its lock and a
// slow or stuck peer delays only itself.
//
// The owner starts run, calls stop, and waits on done. After stop, run writes
// what is queued and returns; a write error makes it drop the rest and return.
type outbox struct {
	conn net.Conn
	wake chan struct{} // capacity 1: a pending signal to run
	done chan struct{} // closed when run returns

	mu      sync.Mutex
	queue   []net.Buffers // guarded by mu
	stopped bool          // guarded by mu; set by stop or a write error, send then drops
}

func newOutbox(conn net.Conn) *outbox {
	return &outbox{conn: conn, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// send queues one frame, given in parts that are written back to back (a
// gathered reply shares its body between ranks). The parts must not change
// afterwards. It reports whether the frame was queued.
func (o *outbox) send(parts ...[]byte) bool {
	o.mu.Lock()
	if o.stopped {
		o.mu.Unlock()
		return false
	}
	o.queue = append(o.queue, net.Buffers(parts))
	o.mu.Unlock()
	o.signal()
	return true
}

// stop makes run return once the queue is written.
func (o *outbox) stop() {
	o.mu.Lock()
	o.stopped = true
	o.mu.Unlock()
	o.signal()
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) run() {
	defer close(o.done)
	for {
		o.mu.Lock()
		q, stopped := o.queue, o.stopped
		o.queue = nil
		o.mu.Unlock()
		if len(q) == 0 {
			if stopped {
				return
			}
			<-o.wake
			continue
		}
		for _, frame := range q {
			if _, err := frame.WriteTo(o.conn); err != nil {
				// The reader sees the broken connection too and reports it.
				o.mu.Lock()
				o.stopped, o.queue = true, nil
				o.mu.Unlock()
				return
			}
		}
	}
}
