package launch

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestLineWriter(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	tests := []struct {
		name   string
		prefix string
		writes []string
		want   string
	}{
		{"whole lines", "[rank 1] ", []string{"a\nb\n"}, "[rank 1] a\n[rank 1] b\n"},
		{"split line", "[rank 1] ", []string{"he", "llo\nwor", "ld\n"}, "[rank 1] hello\n[rank 1] world\n"},
		{"empty lines", "> ", []string{"\n\n"}, "> \n> \n"},
		{"unfinished last line gets a newline", "> ", []string{"a\nb"}, "> a\n> b\n"},
		{"unprefixed last line stays as it is", "", []string{"a\nb"}, "a\nb"},
		{"long line is cut", "> ", []string{long, "\n"}, "> " + long[:maxLine] + "\n> xxxxxxxxxx\n"},
		{"unprefixed long line is cut invisibly", "", []string{long, "\n"}, long + "\n"},
		{"nothing", "> ", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := &lineWriter{mu: new(sync.Mutex), out: &out, prefix: []byte(tt.prefix)}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
				}
			}
			w.Flush()
			if got := out.String(); got != tt.want {
				t.Errorf("output %q; want %q\nwrites: %q", got, tt.want, tt.writes)
			}
		})
	}
}

// TestLineWriterShared writes from several goroutines in odd-sized pieces
// and checks that no line is torn and each writer's lines keep their order.
func TestLineWriterShared(t *testing.T) {
	const writers, lines = 4, 500
	var (
		mu  sync.Mutex
		out bytes.Buffer
		wg  sync.WaitGroup
	)
	for r := range writers {
		w := &lineWriter{mu: &mu, out: &out, prefix: fmt.Appendf(nil, "[rank %d] ", r)}
		var text []byte
		for i := range lines {
			text = fmt.Appendf(text, "line %d of rank %d\n", i, r)
		}
		wg.Go(func() {
			for piece := 1; len(text) > 0; piece = piece%13 + 1 {
				n := min(piece, len(text))
				w.Write(text[:n])
				text = text[n:]
			}
			w.Flush()
		})
	}
	wg.Wait()

	next := make([]int, writers)
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var r, r2, i int
		if _, err := fmt.Sscanf(line, "[rank %d] line %d of rank %d", &r, &i, &r2); err != nil || r != r2 || r < 0 || r >= writers || i != next[r] {
			t.Fatalf("line %q: torn or out of order (want line %d of its rank)", line, next[min(max(r, 0), writers-1)])
		}
		next[r]++
	}
	for r, n := range next {
		if n != lines {
			t.Errorf("rank %d: %d lines; want %d", r, n, lines)
		}
	}
}
