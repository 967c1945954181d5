package nccl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/detcoll/detcoll"
)

func TestHostSize(t *testing.T) {
	for _, tt := range []struct {
		env               string
		world, localWorld int
		perHost           int
		virtual           bool
		bad               string
	}{
		{"", 8, 4, 4, false, ""},
		{"", 8, 0, 1, false, ""}, // no local world size: a rank per host
		{"", 8, 3, 0, false, "do not divide"},
		{"2", 8, 8, 4, true, ""}, // virtual hosts win over the launcher's
		{"8", 8, 1, 1, true, ""}, // one rank per virtual host
		{"3", 8, 8, 0, false, "want a divisor"},
		{"zero", 8, 8, 0, false, "want a divisor"},
		{"0", 8, 8, 0, false, "want a divisor"},
	} {
		t.Setenv(EnvVirtualHosts, tt.env)
		perHost, virtual, err := hostSize(tt.world, tt.localWorld, 0)
		if tt.bad != "" {
			if !errors.Is(err, detcoll.ErrInvalid) || !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("%s=%q world %d local %d: err %v, want ErrInvalid with %q", EnvVirtualHosts, tt.env, tt.world, tt.localWorld, err, tt.bad)
			}
			continue
		}
		if err != nil || perHost != tt.perHost || virtual != tt.virtual {
			t.Errorf("%s=%q world %d local %d: %d, %v, %v; want %d, %v", EnvVirtualHosts, tt.env, tt.world, tt.localWorld, perHost, virtual, err, tt.perHost, tt.virtual)
		}
	}
}

// TestOptionsNeedsAJob: without a launcher's environment Options says so,
// and one host needs no rails: Options returns at once, nothing joined.
func TestOptionsNeedsAJob(t *testing.T) {
	for _, v := range []string{"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", EnvVirtualHosts} {
		t.Setenv(v, "")
	}
	if _, err := Options(context.Background(), detcoll.Options{}); !errors.Is(err, detcoll.ErrInvalid) || !strings.Contains(err.Error(), "launcher") {
		t.Errorf("Options without a job = %v; want ErrInvalid naming the launcher", err)
	}
	t.Setenv(EnvVirtualHosts, "1")
	o, err := Options(context.Background(), detcoll.Options{WorldSize: 4, Rank: 1, Addr: "127.0.0.1:1", Secret: "s", Timeout: time.Second})
	if err != nil || o.Hosts != 0 || o.Interconnect != nil || o.Backend != "cuda" {
		t.Errorf("Options of one host = %+v, %v; want the cuda backend and no rails", o, err)
	}
}

// TestHostSizeFromOptions: Options.Hosts says how many hosts when no
// virtual hosts are asked for, over the launcher's local world size.
func TestHostSizeFromOptions(t *testing.T) {
	t.Setenv(EnvVirtualHosts, "")
	if perHost, virtual, err := hostSize(8, 8, 2); err != nil || perHost != 4 || virtual {
		t.Errorf("hostSize(8, 8, 2) = %d, %v, %v; want 4 ranks per host, not virtual", perHost, virtual, err)
	}
	if _, _, err := hostSize(8, 8, 3); !errors.Is(err, detcoll.ErrInvalid) {
		t.Errorf("hostSize(8, 8, 3) = %v; want ErrInvalid", err)
	}
	t.Setenv(EnvVirtualHosts, "4")
	if perHost, virtual, _ := hostSize(8, 8, 2); perHost != 2 || !virtual {
		t.Errorf("virtual hosts and Options.Hosts: %d per host, virtual %v; want the variable's 2, virtual", perHost, virtual)
	}
}
