package ranktest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Proc is one child started by Start: the test binary running a role by
// itself, which the test reads from and may kill while it runs.
type Proc struct {
	Cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *lockedWriter
}

// Start starts one child in role with the extra environment env and
// returns at once. The child's stdin stays open until the test ends (a
// child may wait for it to close: the parent gone); then the child is
// killed and reaped. It is bound to the test's deadline like Run's ranks.
func Start(t *testing.T, role string, env ...string) *Proc {
	t.Helper()
	exe := executable(t)
	ctx, cancel := context.WithDeadline(context.Background(), deadline(t, 10*time.Minute))
	cmd := exec.CommandContext(ctx, exe, childArgs()...)
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	cmd.WaitDelay = 5 * time.Second
	p := &Proc{Cmd: cmd, stderr: &lockedWriter{w: new(bytes.Buffer)}}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Skipf("cannot start the test binary: %v", err)
	}
	p.stdin, p.stdout = stdin, bufio.NewReader(stdout)
	t.Cleanup(func() {
		p.stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		cancel()
	})
	return p
}

// ReadLine returns the child's next line of stdout, without its newline.
func (p *Proc) ReadLine() (string, error) {
	line, err := p.stdout.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

// Kill kills the child with SIGKILL.
func (p *Proc) Kill() error { return p.Cmd.Process.Kill() }

// Stderr returns what the child wrote to stderr so far.
func (p *Proc) Stderr() string {
	p.stderr.mu.Lock()
	defer p.stderr.mu.Unlock()
	return p.stderr.w.String()
}
