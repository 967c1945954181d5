// Package proc tells whether a peer's process still runs, for ranks that
// share a machine: a faster signal of a lost rank than the end of its
// sockets. A SIGKILLed process closes its sockets only once the kernel has
// torn it down, and a GPU process's teardown (its device memory, its
// contexts) took about a second on the H200 machine; but the kernel marks
// the process as exiting (PF_EXITING) at the start of that teardown, and
// /proc shows the mark. The store and libdetcoll-nccl poll their peers'
// processes with Running every PollEvery.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PollEvery is how often the watchers check their peers' processes.
const PollEvery = 50 * time.Millisecond

// Identity is what a process tells its peers: enough to prove that two
// processes run on one machine and can see each other. A hostname alone
// proves nothing (containers share names, clusters reuse them); the
// kernel's boot id is drawn at random at every boot, so two processes with
// the same one run on the same kernel; and the PID namespace says whether
// each can see the other's process id.
type Identity struct {
	Host  string `json:"host"`
	Boot  string `json:"boot"`  // /proc/sys/kernel/random/boot_id
	PIDNS string `json:"pidns"` // the target of /proc/self/ns/pid, such as "pid:[4026531836]"
	PID   int    `json:"pid"`
	Start string `json:"start"` // the process's start time (/proc/PID/stat), against a reused pid
}

// Self is this process's identity.
func Self() Identity { return Of(os.Getpid()) }

// Of is the identity of process pid as this process sees it (tests give
// other processes' ids).
func Of(pid int) Identity {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	st, _ := readStat(pid)
	return Identity{Host: host, Boot: strings.TrimSpace(string(boot)), PIDNS: ns, PID: pid, Start: st.start}
}

// SameMachine reports whether a and b are processes of one kernel and one
// PID namespace, so that each can watch the other's process. Fields that
// could not be read prove nothing: then it is false.
func SameMachine(a, b Identity) bool {
	return a.Boot != "" && a.Boot == b.Boot && a.PIDNS != "" && a.PIDNS == b.PIDNS
}

// pfExiting is the kernel's PF_EXITING, in the flags of /proc/PID/stat.
const pfExiting = 0x4

// stat is what Running reads of /proc/PID/stat.
type stat struct {
	state byte
	flags uint64
	start string
}

// readStat reads fields 3 (state), 9 (flags) and 22 (start time).
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	// The command (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("proc: /proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("proc: /proc/%d/stat: %d fields", pid, len(f))
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("proc: /proc/%d/stat: flags %q", pid, f[6])
	}
	return stat{state: f[0][0], flags: flags, start: f[19]}, nil
}

// Running reports whether the process of id still runs, and if not, why:
// it is gone, a zombie, exiting (its teardown has begun), or its pid now
// names another process. What cannot be read proves nothing: a process
// that the signal test finds but whose /proc entry is hidden (hidepid,
// another user) runs. A program whose main thread ended while others run
// on shows as a zombie, and counts as gone: detcoll's ranks (Go, Python)
// end with their main thread.
func Running(id Identity) (bool, string) {
	if id.PID <= 0 {
		return true, "" // no process named: nothing to say
	}
	kerr := syscall.Kill(id.PID, 0)
	if errors.Is(kerr, syscall.ESRCH) {
		return false, fmt.Sprintf("its process %d is gone", id.PID)
	}
	st, err := readStat(id.PID)
	switch {
	case errors.Is(err, os.ErrNotExist) && kerr == nil:
		return false, fmt.Sprintf("its process %d is gone", id.PID) // it ended between the two looks
	case err != nil:
		return true, "" // hidden or unreadable: the signal's answer stands
	case st.state == 'Z' || st.state == 'X':
		return false, fmt.Sprintf("its process %d has exited", id.PID)
	case st.flags&pfExiting != 0:
		return false, fmt.Sprintf("its process %d is exiting", id.PID)
	case id.Start != "" && st.start != id.Start:
		return false, fmt.Sprintf("its process %d is gone (the pid is another process's now)", id.PID)
	}
	return true, ""
}
