//go:build unix && !linux

package launch

import "syscall"

// setParentDeath does nothing: only Linux can signal a child when its parent
// dies.
func setParentDeath(*syscall.SysProcAttr) {}

// groupRuns cannot tell zombies from running members here: a group whose
// dead members init has not yet reaped counts as running.
func groupRuns(int) bool { return true }
