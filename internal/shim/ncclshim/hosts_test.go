package ncclshim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/binding/nccl"
	"github.com/detcoll/detcoll/internal/job/proc"
	railnccl "github.com/detcoll/detcoll/nccl"
)

// onMachines puts rank r of shims on machine machineOf(r): its own boot id
// and host name.
func onMachines(shims []*Shim, machineOf func(r int) int) {
	for r, sh := range shims {
		m := machineOf(r)
		sh.self = func(pid int) identity {
			return identity{Host: fmt.Sprintf("gpu%d", m), Boot: fmt.Sprintf("boot%d", m), PIDNS: "pid:[1]", PID: pid}
		}
	}
}

// fakeRails stands for package nccl's Rails: one round over the setup
// (the rails' ids), then an Interconnect whose Host view is the setup's
// gathers cut to the rank's machine, as package nccl's is.
type fakeRails struct {
	fail  map[int]error // by rank: fails before its round
	mu    sync.Mutex
	hosts map[int]int // by rank: the hosts it was asked for
}

func (f *fakeRails) rails(ctx context.Context, o detcoll.Options, setup railnccl.Setup, hosts int) (detcoll.Options, error) {
	if err := f.fail[o.Rank]; err != nil {
		return o, err
	}
	if _, err := setup.AllGather(ctx, "nccl/ids", []byte{byte(o.Rank)}); err != nil {
		return o, err
	}
	f.mu.Lock()
	if f.hosts == nil {
		f.hosts = map[int]int{}
	}
	f.hosts[o.Rank] = hosts
	f.mu.Unlock()
	per := o.WorldSize / hosts
	o.Hosts, o.Interconnect = hosts, fakeInterconnect{setup, o.Rank / per * per, per}
	return o, nil
}

type fakeInterconnect struct {
	setup    railnccl.Setup
	first, n int
}

func (ic fakeInterconnect) Host() detcoll.Rendezvous { return fakeHostView(ic) }
func (ic fakeInterconnect) AllGather(ctx context.Context, send, recv []byte) error {
	return errors.New("fakeInterconnect: no rail traffic in these tests")
}

type fakeHostView fakeInterconnect

func (v fakeHostView) AllGather(ctx context.Context, name string, value []byte) ([][]byte, error) {
	all, err := v.setup.AllGather(ctx, "host/"+name, value)
	if err != nil {
		return nil, err
	}
	return all[v.first : v.first+v.n], nil
}
func (v fakeHostView) Fail(reason string)    { v.setup.Fail(reason) }
func (v fakeHostView) Done() <-chan struct{} { return v.setup.Done() }
func (v fakeHostView) Err() error            { return v.setup.Err() }

// acrossJob is a job of world ranks on machines, with the given settings
// and fake rails.
func acrossJob(t *testing.T, world int, machineOf func(int) int, s Settings, rails *fakeRails) (*fakeOpen, []*Shim) {
	t.Helper()
	o := &fakeOpen{steps: 2}
	_, shims := job(world, o.open, s)
	onMachines(shims, machineOf)
	for _, sh := range shims {
		sh.rails = rails.rails
	}
	return o, shims
}

// TestAcrossHostsHandedToNCCLByDefault: ranks on two machines are handed
// to NCCL, saying how to have detcoll serve them, and nothing is set up.
func TestAcrossHostsHandedToNCCLByDefault(t *testing.T) {
	rails := &fakeRails{}
	o, shims := acrossJob(t, 4, func(r int) int { return r / 2 }, atInit(), rails)
	initAll(t, shims)
	for r, s := range shims {
		st, why := stateOf(s, Handle(r+1))
		if st != unserved || !strings.Contains(why, "several hosts") || !strings.Contains(why, EnvHosts+"=serve") {
			t.Errorf("rank %d: state %d, why %q; want unserved, saying how to serve it", r, st, why)
		}
	}
	if len(o.comms) != 0 || len(rails.hosts) != 0 {
		t.Errorf("opened %d communicators and %d rails; want none", len(o.comms), len(rails.hosts))
	}
}

// TestAcrossHostsServed: with DETCOLL_NCCL_HOSTS=serve, 2 machines of 2
// ranks are served: every rank sets up the rails for 2 hosts over the
// application's communicator and opens detcoll across them; a sum goes
// to detcoll.
func TestAcrossHostsServed(t *testing.T) {
	s := atInit()
	s.AcrossHosts = true
	rails := &fakeRails{}
	o, shims := acrossJob(t, 4, func(r int) int { return r / 2 }, s, rails)
	initAll(t, shims)
	for r, sh := range shims {
		if st, why := stateOf(sh, Handle(r+1)); st != served {
			t.Fatalf("rank %d: state %d (%s); want served", r, st, why)
		}
		if rails.hosts[r] != 2 || o.comms[r].hosts != 2 {
			t.Errorf("rank %d: rails for %d hosts, opened across %d; want 2 and 2", r, rails.hosts[r], o.comms[r].hosts)
		}
		if res, v := sh.Do(sum(Handle(r+1), 0x1000, 0x2000, 64, 0x42), 0); res != 0 || v != Done {
			t.Errorf("rank %d: AllReduce = %d, verdict %v; want it served", r, res, v)
		}
	}
}

// TestAcrossHostsCaptured: a served communicator across machines serves
// a captured call too, in either mode: its signatures are checked on the
// device (internal/backend/hier), which every replay repeats.
func TestAcrossHostsCaptured(t *testing.T) {
	for _, mode := range []Mode{Delegate, Strict} {
		s := atInit()
		s.AcrossHosts, s.Mode = true, mode
		rails := &fakeRails{}
		o := &fakeOpen{steps: 2}
		j, shims := job(4, o.open, s)
		onMachines(shims, func(r int) int { return r / 2 })
		for _, sh := range shims {
			sh.rails = rails.rails
		}
		initAll(t, shims)
		if res, v := shims[0].Do(sum(1, 0x1000, 0x2000, 64, 0x42), 0); res != nccl.Success || v != Done {
			t.Fatalf("mode %d: the first AllReduce = %d, verdict %v; want it served", mode, res, v)
		}
		before := len(o.comms[0].log())
		j.capturing = true
		if res, v := shims[0].Do(sum(1, 0x1000, 0x2000, 64, 0x42), 0); res != nccl.Success || v != Done {
			t.Errorf("mode %d: captured AllReduce = %d, verdict %v; want it served", mode, res, v)
		}
		if got := o.comms[0].log(); len(got) <= before {
			t.Errorf("mode %d: detcoll saw %q; want the captured call", mode, got)
		}
	}
}

// TestAcrossHostsLayouts: layouts the flat tree does not nest over, or
// machines whose ranks cannot share memory, are handed to NCCL with the
// reason, on every rank, before any rail is set up.
func TestAcrossHostsLayouts(t *testing.T) {
	s := atInit()
	s.AcrossHosts = true
	for _, tc := range []struct {
		name      string
		world     int
		machineOf func(int) int
		want      string
	}{
		{"interleaved", 4, func(r int) int { return r % 2 }, "numbered consecutively"},
		{"unequal", 4, func(r int) int { return r / 3 }, "different numbers"},
		{"three a machine", 6, func(r int) int { return r / 3 }, "power of two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rails := &fakeRails{}
			o, shims := acrossJob(t, tc.world, tc.machineOf, s, rails)
			initAll(t, shims)
			for r, sh := range shims {
				if st, why := stateOf(sh, Handle(r+1)); st != unserved || !strings.Contains(why, tc.want) {
					t.Errorf("rank %d: state %d, why %q; want unserved, %q", r, st, why, tc.want)
				}
			}
			if len(o.comms) != 0 || len(rails.hosts) != 0 {
				t.Errorf("opened %d communicators and %d rails; want none", len(o.comms), len(rails.hosts))
			}
		})
	}
}

// TestAcrossHostsRailsFail: a rank whose rails fail tells the others, and
// every rank hands the communicator to NCCL naming that rank's failure.
func TestAcrossHostsRailsFail(t *testing.T) {
	s := atInit()
	s.AcrossHosts = true
	rails := &fakeRails{fail: map[int]error{1: errors.New("libnccl.so.2 not found")}}
	o, shims := acrossJob(t, 4, func(r int) int { return r / 2 }, s, rails)
	initAll(t, shims)
	for r, sh := range shims {
		st, why := stateOf(sh, Handle(r+1))
		if st != unserved || !strings.Contains(why, "libnccl.so.2 not found") {
			t.Errorf("rank %d: state %d, why %q; want unserved with rank 1's failure", r, st, why)
		}
	}
	if len(o.comms) != 0 {
		t.Errorf("opened %d communicators; want none", len(o.comms))
	}
}

// TestVirtualHostsServed: with DETCOLL_VIRTUAL_HOSTS=2, 4 ranks of one
// machine are served as 2 machines of 2 ranks (rails for 2 hosts); a
// number of machines that does not divide the ranks hands the
// communicator to NCCL, saying so.
func TestVirtualHostsServed(t *testing.T) {
	for _, tc := range []struct {
		hosts int
		want  string // "" when served
	}{{2, ""}, {4, ""}, {3, "does not divide"}} {
		s := atInit()
		s.AcrossHosts, s.VirtualHosts = true, tc.hosts
		rails := &fakeRails{}
		o, shims := acrossJob(t, 4, func(int) int { return 0 }, s, rails)
		initAll(t, shims)
		for r, sh := range shims {
			st, why := stateOf(sh, Handle(r+1))
			if tc.want != "" {
				if st != unserved || !strings.Contains(why, tc.want) {
					t.Errorf("%d virtual hosts, rank %d: state %d, why %q; want unserved, %q", tc.hosts, r, st, why, tc.want)
				}
				continue
			}
			if st != served || rails.hosts[r] != tc.hosts || o.comms[r].hosts != tc.hosts {
				t.Errorf("%d virtual hosts, rank %d: state %d (%s), rails for %d hosts; want served across %d", tc.hosts, r, st, why, rails.hosts[r], tc.hosts)
			}
		}
	}
}

// TestSettingsVirtualHosts: DETCOLL_VIRTUAL_HOSTS takes a positive number.
func TestSettingsVirtualHosts(t *testing.T) {
	for v, want := range map[string]int{"": 0, "1": 1, "4": 4} {
		s, err := SettingsFromEnv(func(k string) string {
			if k == EnvVirtualHosts {
				return v
			}
			return ""
		})
		if err != nil || s.VirtualHosts != want {
			t.Errorf("%s=%q: %d, %v; want %d", EnvVirtualHosts, v, s.VirtualHosts, err, want)
		}
	}
	for _, v := range []string{"0", "-2", "two"} {
		if _, err := SettingsFromEnv(func(k string) string {
			if k == EnvVirtualHosts {
				return v
			}
			return ""
		}); err == nil {
			t.Errorf("%s=%q: accepted", EnvVirtualHosts, v)
		}
	}
}

// TestApartRanksServedAlongRails: ranks of one machine that cannot share
// memory (a PID namespace each, as containers have) are served with
// DETCOLL_NCCL_HOSTS=serve as hosts of one rank each, along the rails; on
// two machines too. Without serve, or where two ranks are one process,
// the communicator is handed to NCCL, saying why.
func TestApartRanksServedAlongRails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		across   bool
		machines int
		id       func(r, pid int) identity
		want     string // "" when served, a rank per host
	}{
		{"one machine, a namespace each", true, 1, func(r, pid int) identity {
			return identity{Host: "gpu0", Boot: "boot0", PIDNS: fmt.Sprintf("pid:[%d]", r), PID: pid}
		}, ""},
		{"two machines, a namespace each", true, 2, func(r, pid int) identity {
			return identity{Host: fmt.Sprintf("gpu%d", r/2), Boot: fmt.Sprintf("boot%d", r/2), PIDNS: fmt.Sprintf("pid:[%d]", r), PID: pid}
		}, ""},
		{"not opted in", false, 1, func(r, pid int) identity {
			return identity{Host: "gpu0", Boot: "boot0", PIDNS: fmt.Sprintf("pid:[%d]", r), PID: pid}
		}, "different PID namespaces"},
		{"one process", true, 1, func(r, pid int) identity {
			return identity{Host: "gpu0", Boot: "boot0", PIDNS: "pid:[1]", PID: 7}
		}, "one process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := atInit()
			s.AcrossHosts = tc.across
			rails := &fakeRails{}
			o := &fakeOpen{steps: 2}
			_, shims := job(4, o.open, s)
			for r, sh := range shims {
				sh.self = func(pid int) identity { return tc.id(r, pid) }
				sh.rails = rails.rails
				// As kill(pid, 0) sees it: a process of another PID
				// namespace is not there.
				own := tc.id(r, 0).PIDNS
				sh.alive = func(id identity) bool { return id.PIDNS == own }
			}
			initAll(t, shims)
			time.Sleep(4 * proc.PollEvery) // the liveness watch must leave the others be
			for r, sh := range shims {
				st, why := stateOf(sh, Handle(r+1))
				if tc.want == "" {
					if c := sh.lookup(Handle(r + 1)); c == nil || c.rdv == nil {
						t.Errorf("rank %d: no rendezvous", r)
					} else if err := c.rdv.Err(); err != nil {
						t.Errorf("rank %d: its rendezvous failed (the liveness watch looked across namespaces?): %v", r, err)
					}
					if res, v := sh.Do(sum(Handle(r+1), 0x1000, 0x2000, 64, 0x42), 0); res != 0 || v != Done {
						t.Errorf("rank %d: AllReduce = %d, verdict %v; want it served", r, res, v)
					}
				}
				if tc.want != "" {
					if st != unserved || !strings.Contains(why, tc.want) {
						t.Errorf("rank %d: state %d, why %q; want unserved, %q", r, st, why, tc.want)
					}
					continue
				}
				if st != served || rails.hosts[r] != 4 || o.comms[r].hosts != 4 {
					t.Errorf("rank %d: state %d (%s), rails for %d hosts; want served across 4 hosts of one rank", r, st, why, rails.hosts[r])
				}
			}
		})
	}
}

// TestVirtualHostsKeepWhatIsKnown: the virtual split does not make one
// process two, nor a rank of unknown machine known.
func TestVirtualHostsKeepWhatIsKnown(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   func(r, pid int) identity
		want string
	}{
		{"one process on two virtual machines", func(r, pid int) identity {
			return identity{Host: "gpu0", Boot: "boot0", PIDNS: fmt.Sprintf("pid:[%d]", r%2), PID: 7 + r%2}
		}, "a process of its own"},
		{"no boot id", func(r, pid int) identity {
			return identity{Host: "gpu0", PIDNS: "pid:[1]", PID: pid}
		}, "a process of its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := atInit()
			s.AcrossHosts, s.VirtualHosts = true, 2
			rails := &fakeRails{}
			o := &fakeOpen{steps: 2}
			_, shims := job(4, o.open, s)
			for r, sh := range shims {
				sh.self = func(pid int) identity { return tc.id(r, pid) }
				sh.rails = rails.rails
			}
			initAll(t, shims)
			for r, sh := range shims {
				if st, why := stateOf(sh, Handle(r+1)); st != unserved || !strings.Contains(why, tc.want) {
					t.Errorf("rank %d: state %d, why %q; want unserved, %q", r, st, why, tc.want)
				}
			}
		})
	}
}
