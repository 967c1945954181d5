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
// Two limits. Between processes of one machine, whose deaths the process
// watch finds at once (procwatch.go), silence only has to find a process
// that is stopped or hung: 5 s, long against any scheduling hiccup. A peer
// on another machine can only be found by its silence when its machine
// is gone, or late when its sockets outlive it (a GPU process's
// teardown): there the limit is remoteSilence, under a second, as the
// contract bounds the time to a lost rank's error. Both are long against a
// healthy process's scheduling (a ping is a few bytes, sent by a
// goroutine the Go runtime schedules whatever the rest of the process
// does, nine of them per remote limit) and short against the default
// timeout of ten minutes. A connection starts with the long limit and
// takes the short one once the peer's identity shows another machine.
// DETCOLL_STORE_SILENCE overrides both (a Go duration).

// pingEvery is how often each end pings the other.
const pingEvery = 100 * time.Millisecond

// defaultSilence is the silence limit between processes of one machine
// (and before a peer has said where it runs), without
// DETCOLL_STORE_SILENCE.
const defaultSilence = 5 * time.Second

// remoteSilence is the silence limit for a peer on another machine,
// without DETCOLL_STORE_SILENCE.
const remoteSilence = 900 * time.Millisecond

// EnvSilence names the variable that sets the silence limit.
const EnvSilence = settings.StoreSilence

// silenceLimit is the limit in force for a peer on this machine (or not
// yet known to be elsewhere): the variable's, if it is a duration of at
// least twice pingEvery, else defaultSilence.
func silenceLimit() time.Duration {
	if d, ok := silenceSetting(); ok {
		return d
	}
	return defaultSilence
}

// remoteLimit is silenceLimit for a peer on another machine.
func remoteLimit() time.Duration {
	if d, ok := silenceSetting(); ok {
		return d
	}
	return remoteSilence
}

func silenceSetting() (time.Duration, bool) {
	if v := settings.Get(EnvSilence); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d >= 2*pingEvery {
			return d, true
		}
	}
	return 0, false
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
