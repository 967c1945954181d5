package store

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// A process that is stopped (SIGSTOP, a frozen machine) or whose host has
// vanished keeps its sockets open, and a SIGKILLed one closes them only
// once the kernel has torn it down (a GPU process's teardown took about a
// second on the H200 machine): the connection's end alone finds those late
// or never. So both ends of every connection ping every pingEvery, from a
// goroutine of their own, and each end's reader gives up on a peer it has
// not heard from for the silence limit: the server fails the job naming
// that rank, a client reports rank 0 (the server) lost. Any frame counts,
// not only pings.
//
// The limit is long against a healthy process's scheduling (a ping is a
// few bytes, sent by a goroutine the Go runtime schedules whatever the
// rest of the process does) and short against the default timeout of ten
// minutes; DETCOLL_STORE_SILENCE overrides it (a Go duration).

// pingEvery is how often each end pings the other.
const pingEvery = 250 * time.Millisecond

// defaultSilence is the silence limit without DETCOLL_STORE_SILENCE.
const defaultSilence = 5 * time.Second

// EnvSilence names the variable that sets the silence limit.
const EnvSilence = settings.StoreSilence

// silenceLimit is the limit in force: the variable's, if it is a positive
// duration of at least twice pingEvery, else defaultSilence.
func silenceLimit() time.Duration {
	if v := settings.Get(EnvSilence); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d >= 2*pingEvery {
			return d
		}
	}
	return defaultSilence
}

// pingFrame is the ping, encoded once.
var pingFrame = encode(msg{typ: tPing})

// pinging sends a ping on o every pingEvery until stop is closed.
func pinging(o *outbox, stop <-chan struct{}) {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			o.send(pingFrame)
		}
	}
}

// expectWord sets conn's read deadline the silence limit from now: the
// reader calls it before each read.
func expectWord(conn net.Conn, limit time.Duration) error {
	return conn.SetReadDeadline(time.Now().Add(limit))
}

// silence is the reason of a failure found by the silence limit.
func silence(who string, limit time.Duration) string {
	return fmt.Sprintf("no word from %s for %v (stopped, hung, or its host is gone)", who, limit)
}

// silent reports whether err is a read that outlived its deadline.
func silent(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
