//go:build detcoll_noaot

package cuda

import "testing"

// noAOT skips t when DETCOLL_AOT_DIR names no folder: a binary built with
// -tags detcoll_noaot then has no kernels built ahead of time to check.
func noAOT(t *testing.T) bool {
	if _, ok := aotFiles.(noFiles); ok {
		t.Skip("-tags detcoll_noaot without DETCOLL_AOT_DIR: no kernels built ahead of time to check")
		return true
	}
	return false
}
