//go:build !detcoll_noaot

package cuda

import "testing"

// noAOT reports whether this binary reads no kernels built ahead of time:
// never, where they are embedded.
func noAOT(*testing.T) bool { return false }
