package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/detcoll/detcoll/internal/core/num"
)

// Validate reports the first thing that makes r inconsistent, or nil.
// Read and Write call it.
func (r *Report) Validate() error {
	if r.Kind != Kind {
		return fmt.Errorf("report: kind %q, want %q", r.Kind, Kind)
	}
	if r.SchemaVersion != SchemaVersion {
		return fmt.Errorf("report: schema version %d; this detcoll reads version %d", r.SchemaVersion, SchemaVersion)
	}
	if err := r.Meta.validate(); err != nil {
		return fmt.Errorf("report: metadata: %w", err)
	}
	if len(r.Rows) == 0 {
		return fmt.Errorf("report: no rows")
	}
	type key struct {
		op, mode string
		bytes    int64
	}
	seen := make(map[key]bool, len(r.Rows))
	for i := range r.Rows {
		row := &r.Rows[i]
		k := key{row.Operation, row.Mode, row.InputBytesPerRank}
		if seen[k] {
			return fmt.Errorf("report: rows[%d]: a second row for %s, %d bytes, %s", i, k.op, k.bytes, k.mode)
		}
		seen[k] = true
		if err := row.validate(&r.Meta); err != nil {
			return fmt.Errorf("report: rows[%d] (%s, %d bytes, %s): %w", i, row.Operation, row.InputBytesPerRank, row.Mode, err)
		}
	}
	return nil
}

func (m *Meta) validate() error {
	dt, dtErr := num.ParseDType(m.DType)
	switch {
	case m.WorldSize < 1:
		return fmt.Errorf("world_size %d: want >= 1", m.WorldSize)
	case dtErr != nil || !dt.Reducible():
		return fmt.Errorf("dtype %q: want bfloat16, float16, float32 or float64", m.DType)
	case m.Backend != "cpu" && m.Backend != "cuda":
		return fmt.Errorf("backend %q: want cpu or cuda", m.Backend)
	case m.Device == "":
		return fmt.Errorf("device: empty")
	case m.Reference != ReferenceNone && m.Reference != ReferenceMPI && m.Reference != ReferenceNCCL && m.Reference != ReferenceSymmMem:
		return fmt.Errorf("reference %q: want %s, %s, %s or %s", m.Reference, ReferenceMPI, ReferenceNCCL, ReferenceSymmMem, ReferenceNone)
	case m.Reference == ReferenceNone && m.ReferenceDType != "":
		return fmt.Errorf("reference_dtype %q without a reference", m.ReferenceDType)
	case m.GPUSharing != "" && m.GPUSharing != SharingMPS && m.GPUSharing != SharingTimeSliced:
		return fmt.Errorf("gpu_sharing %q: want %s, %s or none", m.GPUSharing, SharingMPS, SharingTimeSliced)
	case (m.GPUSharing != "") != (m.RanksPerGPU > 1):
		return fmt.Errorf("gpu_sharing %q with %d ranks per GPU: want both or neither", m.GPUSharing, m.RanksPerGPU)
	case m.Reduction != "" && !validReduction(m.Reduction):
		return fmt.Errorf("reduction %q: want avg, premulsum, max or min (the sum is empty)", m.Reduction)
	case m.GoVersion == "":
		return fmt.Errorf("go_version: empty")
	case m.Commit == "":
		return fmt.Errorf("commit: empty (say \"unknown\")")
	case m.Warmup < 0:
		return fmt.Errorf("warmup %d: want >= 0", m.Warmup)
	case m.Iterations < 1:
		return fmt.Errorf("iterations %d: want >= 1", m.Iterations)
	case len(m.Modes) == 0:
		return fmt.Errorf("timing_modes: none")
	case len(bytes.TrimSpace(m.Options)) == 0 || bytes.TrimSpace(m.Options)[0] != '{':
		return fmt.Errorf("options: want a JSON object, got %q", m.Options)
	}
	if m.ReferenceDType != "" {
		if rdt, err := num.ParseDType(m.ReferenceDType); err != nil || !rdt.Reducible() {
			return fmt.Errorf("reference_dtype %q: want bfloat16, float16, float32 or float64", m.ReferenceDType)
		}
	}
	for i, mode := range m.Modes {
		if !slices.Contains(Modes, mode) {
			return fmt.Errorf("timing_modes[%d] %q: want one of %v", i, mode, Modes)
		}
		if slices.Contains(m.Modes[:i], mode) {
			return fmt.Errorf("timing_modes[%d] %q: listed twice", i, mode)
		}
	}
	t, err := time.Parse(time.RFC3339, m.Date)
	if err != nil {
		return fmt.Errorf("date %q: want RFC 3339, such as 2026-01-02T15:04:05Z", m.Date)
	}
	if _, off := t.Zone(); off != 0 {
		return fmt.Errorf("date %q: want UTC", m.Date)
	}
	return nil
}

func (row *Row) validate(m *Meta) error {
	dt, _ := num.ParseDType(m.DType) // valid: Meta.validate ran
	switch {
	case row.Operation == "":
		return fmt.Errorf("operation: empty")
	case !slices.Contains(m.Modes, row.Mode):
		return fmt.Errorf("mode %q is not among the timing_modes %v", row.Mode, m.Modes)
	case row.InputBytesPerRank <= 0 || row.InputBytesPerRank%int64(dt.Size()) != 0:
		return fmt.Errorf("input_bytes_per_rank %d: want a positive multiple of the %s size, %d", row.InputBytesPerRank, m.DType, dt.Size())
	}
	if err := checkSamples("detcoll", row.DetcollUS, row.DetcollSamplesUS, m); err != nil {
		return err
	}
	if err := row.checkSummary("detcoll", row.DetcollUS, row.DetcollP10US, row.DetcollP90US, row.DetcollBusBW, row.DetcollSamplesUS, m); err != nil {
		return err
	}
	if m.Reference == ReferenceNone {
		if row.ReferenceUS != 0 || len(row.ReferenceSamplesUS) != 0 ||
			row.ReferenceP10US != 0 || row.ReferenceP90US != 0 || row.ReferenceBusBW != 0 {
			return fmt.Errorf("reference times in a report without a reference")
		}
		return nil
	}
	if err := checkSamples("reference", row.ReferenceUS, row.ReferenceSamplesUS, m); err != nil {
		return err
	}
	return row.checkSummary("reference", row.ReferenceUS, row.ReferenceP10US, row.ReferenceP90US, row.ReferenceBusBW, row.ReferenceSamplesUS, m)
}

// checkSummary checks one side's optional summary fields, once
// checkSamples has passed: each is 0 (absent) or what the samples give.
func (row *Row) checkSummary(side string, us, p10, p90, busbw float64, perRank [][]float64, m *Meta) error {
	for _, f := range []struct {
		name string
		p    float64
		got  float64
	}{{"p10", 10, p10}, {"p90", 90, p90}} {
		if want := SlowestPercentile(perRank, f.p); f.got != 0 && f.got != want {
			return fmt.Errorf("%s_%s_us %v: the samples give %v (the largest of the ranks' %vth percentiles)", side, f.name, f.got, want, f.p)
		}
	}
	if _, want := Bandwidth(row.Operation, row.InputBytesPerRank, m.WorldSize, us); busbw != 0 && busbw != want {
		return fmt.Errorf("%s_busbw_gbps %v: the median gives %v", side, busbw, want)
	}
	return nil
}

// checkSamples checks one side's samples: one list per rank, Iterations
// each, finite and >= 0, and that us is their Slowest.
func checkSamples(side string, us float64, perRank [][]float64, m *Meta) error {
	if len(perRank) != m.WorldSize {
		return fmt.Errorf("%s_samples_us: %d ranks, want world_size %d", side, len(perRank), m.WorldSize)
	}
	for r, s := range perRank {
		if len(s) != m.Iterations {
			return fmt.Errorf("%s_samples_us[%d]: %d samples, want iterations %d", side, r, len(s), m.Iterations)
		}
		for i, v := range s {
			if !(v >= 0) || math.IsInf(v, 1) {
				return fmt.Errorf("%s_samples_us[%d][%d] %v: want a finite time >= 0", side, r, i, v)
			}
		}
	}
	if want := Slowest(perRank); us != want {
		return fmt.Errorf("%s_us %v: the samples give %v (slowest rank's median)", side, us, want)
	}
	return nil
}

// validReduction reports whether name is an operator besides the sum.
func validReduction(name string) bool {
	op, err := num.ParseRedOp(name)
	return err == nil && op != num.Sum
}
