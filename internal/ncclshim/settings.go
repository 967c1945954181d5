package ncclshim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
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

// The environment variables the shim reads, once, at its first call.
const (
	EnvMode     = "DETCOLL_NCCL_MODE" // "delegate" or "strict"
	EnvCapacity = "DETCOLL_CAPACITY"  // bytes per call per rank, with an optional KiB, MiB or GiB
	EnvTimeout  = "DETCOLL_TIMEOUT"   // a Go duration: the bound on every wait for peers
	EnvRealNCCL = "DETCOLL_REAL_NCCL" // the real libnccl.so.2 (read by the C boundary)
)

// Defaults. The capacity is per call; a larger all-reduce is split into
// calls of at most this much. Each rank holds up to twice it in device
// memory. The timeout is NCCL's and PyTorch's usual watchdog bound.
const (
	DefaultCapacity = 256 << 20
	DefaultTimeout  = 10 * time.Minute
)

// Settings are the shim's configuration.
type Settings struct {
	Mode     Mode
	Capacity int64
	Timeout  time.Duration
}

// SettingsFromEnv reads the settings; an unset variable means its default.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{Mode: Delegate, Capacity: DefaultCapacity, Timeout: DefaultTimeout}
	switch v := getenv(EnvMode); v {
	case "", "delegate":
	case "strict":
		s.Mode = Strict
	default:
		return s, fmt.Errorf("%s=%q: want \"delegate\" or \"strict\"", EnvMode, v)
	}
	if v := getenv(EnvCapacity); v != "" {
		n, err := parseBytes(v)
		if err != nil || n < 1<<10 {
			return s, fmt.Errorf("%s=%q: want a size of at least 1KiB, such as 256MiB", EnvCapacity, v)
		}
		s.Capacity = n
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
