package cpu

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The futex operations (linux/futex.h; x/sys does not define them).
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

// futexWait sleeps while the 32-bit word at addr holds val, for at most d.
// Spurious and early returns are fine: callers re-check their condition.
// The futex is shared (not FUTEX_PRIVATE) because the word lives in memory
// mapped by several processes.
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every sleeper on addr.
func futexWake(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, uintptr(1<<31-1), 0, 0, 0)
}

// low32 is the futex word of a sequence word: its low half on a
// little-endian machine, which changes on every increment.
func low32(w *uint64) *uint32 { return (*uint32)(unsafe.Pointer(w)) }

// schedYield gives this thread's core to another runnable thread, if any
// (sched_yield(2)); it returns at once when there is none. Not
// runtime.Gosched, which yields only to this process's goroutines.
func schedYield() {
	unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}
