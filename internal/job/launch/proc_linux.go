package launch

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// setParentDeath makes the kernel send a rank SIGTERM should the launcher
// die without stopping it (kill -9). The signal follows the death of the
// thread that started the rank, not of the process: Run keeps that thread
// locked until every rank is reaped.
func setParentDeath(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }

// groupRuns reports whether process group pgid has a member that is not a
// zombie. An orphan that died stays in its group until init reaps it, which
// some inits do only every second or so; Run need not wait for that. When
// /proc cannot tell, the group counts as running.
func groupRuns(pgid int) bool {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range dir {
		if e.Name()[0] < '1' || e.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold anything, even ") ".
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 {
			continue
		}
		if g, _ := strconv.Atoi(string(f[2])); g == pgid && f[0][0] != 'Z' && f[0][0] != 'X' {
			return true
		}
	}
	return false
}
