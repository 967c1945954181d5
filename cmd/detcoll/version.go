package main

import (
	"context"
	"io"

	"github.com/detcoll/detcoll/internal/tools/version"
)

const versionSynopsis = `

Prints detcoll's module version and the commit it was built from (vcs.revision,
"(modified)" for a tree with changes), the Go version, and the versions of the
CUDA driver, NVRTC and NCCL found on this machine, or "not found" and why.
A machine without a GPU is not an error: the exit status is 0.`

// runVersion is "detcoll version".
func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", versionSynopsis, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	return version.Write(stdout, version.Read())
}
