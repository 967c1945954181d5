package launch

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Self runs n ranks of this same program (os.Executable) with args, with
// this process's environment, through Run: for a tool that starts its own
// ranks when no launcher started it (detcoll bench and verify re-run
// themselves). It returns what Run returns.
func Self(ctx context.Context, n int, args []string, stdout, stderr io.Writer) error {
	return SelfEnv(ctx, n, args, os.Environ(), stdout, stderr)
}

// SelfEnv is Self with the ranks' environment env.
func SelfEnv(ctx context.Context, n int, args, env []string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to start its ranks: %w", err)
	}
	return Run(ctx, Config{N: n, Program: exe, Args: args, Env: env, Stdout: stdout, Stderr: stderr})
}
