package ncclshim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// Mode says what happens to a reduction that detcoll cannot make
// deterministic.
type Mode int

const (
	// Delegate hands it to the real NCCL (the default: what an
	// application did before the shim, it still does).
	Delegate Mode = iota
	// Strict fails it with ncclInvalidUsage, naming why.
	Strict
)

// Setup says when a communicator's detcoll side is set up.
type Setup int

const (
	// SetupLazy sets it up at its first reduction detcoll serves
	// (the default: a communicator that never reduces costs nothing).
	SetupLazy Setup = iota
	// SetupAtInit sets it up when the real one is made (a blocking init
	// outside a group), so that a program whose first reduction is
	// captured in a CUDA graph gets detcoll's bits there too.
	SetupAtInit
)

// The environment variables the shim reads, once, at its first call.
const (
	EnvMode     = settings.NCCLMode   // "delegate" or "strict"
	EnvCapacity = settings.Capacity   // bytes per call per rank, with an optional KiB, MiB or GiB
	EnvMemory   = settings.NCCLMemory // device memory per served communicator, the same units
	EnvSetup    = settings.NCCLSetup  // "lazy" or "init"
	EnvTimeout  = settings.Timeout    // a Go duration: the bound on every wait for peers
	EnvReport   = settings.NCCLReport // a file: the JSON record of what went where, written at exit
	EnvRealNCCL = settings.RealNCCL   // the real libnccl.so.2 (read by the C boundary)
	EnvHosts    = settings.NCCLHosts  // "delegate" or "serve": communicators across hosts
	// EnvVirtualHosts (an integer H) splits every communicator's ranks
	// into H machines of consecutive ranks, whatever machines they are on:
	// one machine then runs the several-machine path (with NCCL's own
	// host split by NCCL_HOSTID, and its P2P and SHM transports off).
	EnvVirtualHosts = settings.VirtualHosts
)

// Defaults. A served communicator holds at most DefaultMemory of device
// memory: its detcoll buffer for calls of up to the capacity (derived
// from the memory, capacityFor) and the scratch of a reduce-scatter
// larger than that. Larger calls are split into calls that fit. The
// timeout is NCCL's and PyTorch's usual watchdog bound.
const (
	DefaultMemory  = 64 << 20
	DefaultTimeout = 10 * time.Minute
)

// Settings are the shim's configuration.
type Settings struct {
	Mode Mode
	// Capacity, when set, is the largest piece of a call; 0 derives it
	// from Memory and the communicator's size.
	Capacity int64
	Memory   int64
	Setup    Setup
	Timeout  time.Duration
	// Report is the file the record of calls is written to at exit, or
	// "" for none (then nothing is counted).
	Report string
	// AcrossHosts serves communicators whose ranks are on several
	// machines, over rails of NCCL communicators of their own
	// (DETCOLL_NCCL_HOSTS=serve); by default they are handed to NCCL.
	AcrossHosts bool
	// VirtualHosts, when above 0, is the number of machines every
	// communicator's ranks are split into, consecutively
	// (DETCOLL_VIRTUAL_HOSTS): to run the several-machine path on one.
	VirtualHosts int
}

// SettingsFromEnv reads the settings; an unset variable means its default.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{Mode: Delegate, Memory: DefaultMemory, Timeout: DefaultTimeout, Report: getenv(EnvReport)}
	switch v := getenv(EnvMode); v {
	case "", "delegate":
	case "strict":
		s.Mode = Strict
	default:
		return s, fmt.Errorf("%s=%q: want \"delegate\" or \"strict\"", EnvMode, v)
	}
	switch v := getenv(EnvHosts); v {
	case "", "delegate":
	case "serve":
		s.AcrossHosts = true
	default:
		return s, fmt.Errorf("%s=%q: want \"delegate\" or \"serve\"", EnvHosts, v)
	}
	if v := getenv(EnvVirtualHosts); v != "" {
		h, err := strconv.Atoi(v)
		if err != nil || h < 1 {
			return s, fmt.Errorf("%s=%q: want a number of machines, at least 1", EnvVirtualHosts, v)
		}
		s.VirtualHosts = h
	}
	switch v := getenv(EnvSetup); v {
	case "", "lazy":
	case "init":
		s.Setup = SetupAtInit
	default:
		return s, fmt.Errorf("%s=%q: want \"lazy\" or \"init\"", EnvSetup, v)
	}
	for _, b := range []struct {
		env   string
		field *int64
		least int64
		eg    string
	}{{EnvCapacity, &s.Capacity, 1 << 10, "256MiB"}, {EnvMemory, &s.Memory, 32 << 20, "128MiB"}} {
		v := getenv(b.env)
		if v == "" {
			continue
		}
		n, err := parseBytes(v)
		if err != nil || n < b.least {
			return s, fmt.Errorf("%s=%q: want a size of at least %s, such as %s", b.env, v, formatBytes(b.least), b.eg)
		}
		*b.field = n
	}
	if v := getenv(EnvTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("%s=%q: want a positive duration, such as 5m", EnvTimeout, v)
		}
		s.Timeout = d
	}
	return s, nil
}

// parseBytes reads "1024", "64KiB", "256MiB" or "2GiB".
func parseBytes(v string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if s, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = s, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", v)
	}
	return n * mult, nil
}

// formatBytes writes n in the largest unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.suffix)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// mib writes n in MiB with one decimal.
func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) }
