package bench

import (
	"strings"
	"testing"

	"github.com/detcoll/detcoll/internal/core/num"
	"github.com/detcoll/detcoll/internal/tools/report"
)

func validConfig() Config {
	return Config{
		Backend: "cpu", Reference: report.ReferenceNone, DType: num.Float32Type,
		Ops: Ops, Sizes: []int{1024, 4096}, Modes: []string{report.ModeWallClock},
		Warmup: 1, Iterations: 3, Seed: 1,
	}
}

// TestValidate refuses each bad setting with a message naming it.
func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		world int
		edit  func(c *Config)
		want  string
	}{
		{"backend", 2, func(c *Config) { c.Backend = "tpu" }, `backend "tpu"`},
		{"reference of another backend", 2, func(c *Config) { c.Reference = report.ReferenceNCCL }, `reference "nccl": the cpu backend`},
		{"unknown reference", 2, func(c *Config) { c.Reference = "gloo" }, `reference "gloo"`},
		{"world", 0, func(c *Config) {}, "world size 0"},
		{"dtype not reducible", 2, func(c *Config) { c.DType = num.Int32Type }, "dtype int32"},
		{"dtype invalid", 2, func(c *Config) { c.DType = num.Invalid }, "dtype dtype(0)"},
		{"unknown reduction", 2, func(c *Config) { c.Red = 9 }, "reduction redop(9)"},
		{"negative warmup", 2, func(c *Config) { c.Warmup = -1 }, "warmup -1: want >= 0"},
		{"zero iterations", 2, func(c *Config) { c.Iterations = 0 }, "iterations 0: want > 0"},
		{"negative iterations", 2, func(c *Config) { c.Iterations = -5 }, "iterations -5"},
		{"no operations", 2, func(c *Config) { c.Ops = nil }, "no operations"},
		{"no sizes", 2, func(c *Config) { c.Sizes = nil }, "no sizes"},
		{"no modes", 2, func(c *Config) { c.Modes = nil }, "no timing modes"},
		{"mode of another backend", 2, func(c *Config) { c.Modes = []string{report.ModeGraph} }, `timing mode "graph": the cpu backend has`},
		{"mode twice", 2, func(c *Config) { c.Modes = []string{report.ModeWallClock, report.ModeWallClock} }, "listed twice"},
		{"unknown operation", 2, func(c *Config) { c.Ops = []Op{"all_to_all"} }, `operation "all_to_all"`},
		{"operation twice", 2, func(c *Config) { c.Ops = []Op{AllReduce, AllGather, AllReduce} }, "operation all_reduce listed twice"},
		{"size twice", 2, func(c *Config) { c.Sizes = []int{64, 128, 64} }, "size 64 bytes listed twice"},
		{"zero size", 2, func(c *Config) { c.Sizes = []int{0} }, "size 0 bytes: want a positive multiple"},
		{"negative size", 2, func(c *Config) { c.Sizes = []int{-4} }, "size -4 bytes"},
		{"size not whole elements", 2, func(c *Config) { c.Sizes = []int{1026} }, "size 1026 bytes: want a positive multiple of the float32 size, 4"},
		{"reduce-scatter not divisible", 3, func(c *Config) { c.Ops = []Op{ReduceScatter}; c.Sizes = []int{16} },
			"reduce_scatter of 16 bytes: its 4 float32 elements are not a multiple of the world size 3"},
		{"reduce-scatter-many not divisible", 3, func(c *Config) { c.Ops = []Op{ReduceScatterMany}; c.Sizes = []int{16} },
			"reduce_scatter_many of 16 bytes: its 4 float32 elements are not a multiple of the world size 3"},
		{"reduce-scatter-many too small", 2, func(c *Config) { c.Ops = []Op{ReduceScatterMany}; c.Sizes = []int{8} },
			"two buffers need at least 2 x 2"},
		{"all-gather-many too small", 2, func(c *Config) { c.Ops = []Op{AllGatherMany}; c.Sizes = []int{4} },
			"all_gather_many of 4 bytes: two buffers need at least 2 elements"},
	}
	if err := validConfig().Validate(2); err != nil {
		t.Fatalf("valid config: Validate = %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.edit(&c)
			err := c.Validate(tt.world)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate(%d) = %v; want an error containing %q", tt.world, err, tt.want)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for _, tt := range []struct {
		name  string
		world int
		edit  func(c *Config)
	}{
		{"no warmup", 2, func(c *Config) { c.Warmup = 0 }},
		{"odd sizes for gathers", 3, func(c *Config) { c.Ops = []Op{AllGather, Broadcast, AllReduce}; c.Sizes = []int{4, 12, 1000} }},
		{"reduce-scatter divisible", 3, func(c *Config) { c.Ops = []Op{ReduceScatter, ReduceScatterMany}; c.Sizes = []int{24, 1200} }},
		{"bfloat16", 2, func(c *Config) { c.DType = num.BFloat16Type; c.Sizes = []int{2 * 2 * 2} }},
		{"cuda modes", 2, func(c *Config) {
			c.Backend, c.Reference = "cuda", report.ReferenceNCCL
			c.Modes = []string{report.ModeSynchronised, report.ModePipelined, report.ModeGraph}
		}},
		{"mpi", 2, func(c *Config) { c.Reference = report.ReferenceMPI }},
	} {
		c := validConfig()
		tt.edit(&c)
		if err := c.Validate(tt.world); err != nil {
			t.Errorf("%s: Validate(%d) = %v; want nil", tt.name, tt.world, err)
		}
	}
}

func TestCapacity(t *testing.T) {
	c := validConfig()
	c.Sizes = []int{4096, 1 << 20, 64}
	if got, want := c.Capacity(), int64(1<<20+128); got != want {
		t.Errorf("Capacity = %d; want %d", got, want)
	}
	c.Iterations = 1 << 20
	if got, want := c.Capacity(), int64(2*8<<20); got != want {
		t.Errorf("Capacity with %d iterations = %d; want %d (the samples' gather)", c.Iterations, got, want)
	}
}
