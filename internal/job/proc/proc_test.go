package proc

import (
	"os/exec"
	"strings"
	"testing"
)

func TestRunning(t *testing.T) {
	me := Self()
	if me.Boot == "" || me.PIDNS == "" || me.Start == "" {
		t.Fatalf("Self() = %+v: boot id, PID namespace and start time must be read (Linux)", me)
	}
	if ok, why := Running(me); !ok {
		t.Errorf("this process: not running (%s)", why)
	}
	if !SameMachine(me, me) || SameMachine(me, Identity{}) || SameMachine(me, Identity{Boot: me.Boot, PIDNS: "pid:[1]"}) {
		t.Error("SameMachine: wrong for itself, an empty identity or another PID namespace")
	}

	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	child := Of(cmd.Process.Pid)
	if ok, why := Running(child); !ok {
		t.Errorf("a sleeping child: not running (%s)", why)
	}
	if ok, why := Running(Identity{PID: child.PID, Start: "1"}); ok || !strings.Contains(why, "another process") {
		t.Errorf("a reused pid (another start time): %v, %q", ok, why)
	}
	cmd.Process.Kill()
	// Not reaped yet: exiting, then a zombie; neither runs any more.
	for range 100 {
		if ok, _ := Running(child); !ok {
			break
		}
		exec.Command("true").Run() // a short pause that needs no clock
	}
	if ok, why := Running(child); ok || !strings.Contains(why, "exit") {
		t.Errorf("a killed child, not reaped: %v, %q", ok, why)
	}
	cmd.Wait()
	if ok, why := Running(child); ok || !strings.Contains(why, "gone") {
		t.Errorf("a reaped child: %v, %q", ok, why)
	}
}
