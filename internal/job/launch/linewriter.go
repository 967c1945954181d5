package launch

import (
	"bytes"
	"io"
	"sync"
)

// maxLine bounds the unfinished line a lineWriter holds, so that a rank that
// writes binary data or one endless line cannot grow the launcher's memory.
const maxLine = 64 << 10

// lineWriter passes one stream of a rank's output to a shared writer whole
// lines at a time, each behind prefix, so that the lines of different ranks
// never interleave. A lineWriter is used by one goroutine; mu, shared by all
// the lineWriters of a job, guards out.
type lineWriter struct {
	mu     *sync.Mutex
	out    io.Writer
	prefix []byte

	partial []byte // the unfinished last line
	batch   []byte // scratch: what one Write passes on
}

// Write passes on the complete lines of p in one call to out and keeps the
// rest. It never fails: a rank must not stall or die because its launcher
// cannot write, so output that out refuses is dropped.
func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.batch = w.batch[:0]
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		w.batch = append(w.batch, w.prefix...)
		w.batch = append(w.batch, w.partial...)
		w.batch = append(w.batch, p[:i+1]...)
		w.partial = w.partial[:0]
		p = p[i+1:]
	}
	w.partial = append(w.partial, p...)
	for len(w.partial) >= maxLine {
		w.cut(w.partial[:maxLine])
		w.partial = append(w.partial[:0], w.partial[maxLine:]...)
	}
	w.send()
	return n, nil
}

// Flush passes on the unfinished line, ended by a newline if prefixed lines
// are wanted, for the next prefix must start a line.
func (w *lineWriter) Flush() {
	w.batch = w.batch[:0]
	if len(w.partial) > 0 {
		w.cut(w.partial)
		w.partial = w.partial[:0]
	}
	w.send()
}

// cut adds line, which lacks its newline, to the batch.
func (w *lineWriter) cut(line []byte) {
	w.batch = append(w.batch, w.prefix...)
	w.batch = append(w.batch, line...)
	if len(w.prefix) > 0 {
		w.batch = append(w.batch, '\n')
	}
}

func (w *lineWriter) send() {
	if len(w.batch) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(w.batch) // dropped on error: see Write
}
