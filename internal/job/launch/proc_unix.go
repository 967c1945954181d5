//go:build unix

package launch

import (
	"os"
	"syscall"
)

// sysProcAttr puts a rank in a process group of its own, led by the rank,
// so that signalGroup reaches the processes it starts too.
func sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setParentDeath(a)
	return a
}

// signalGroup sends sig to the process group led by pid. An empty group is
// not an error: it has nothing left to stop.
func signalGroup(pid int, sig syscall.Signal) {
	syscall.Kill(-pid, sig)
}

// groupAlive reports whether the group led by pid has a member left that
// runs. EPERM (a member we may not signal) counts as one.
func groupAlive(pid int) bool {
	return syscall.Kill(-pid, 0) != syscall.ESRCH && groupRuns(pid)
}

// exitSignal is the signal that ended a process; nil if it exited.
func exitSignal(ps *os.ProcessState) os.Signal {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return nil
}
