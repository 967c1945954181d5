package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/tools/bench"
)

// Kind and SchemaVersion identify the summary's format; a change that
// old readers would misread bumps SchemaVersion.
const (
	Kind          = "detcoll_soak"
	SchemaVersion = 1
)

// Summary is the JSON report of a soak.
type Summary struct {
	Kind          string `json:"kind"`
	SchemaVersion int    `json:"schema_version"`
	// Pass is the verdict: no wrong result, no error, nothing leaked;
	// with a Kill, every survivor failed as it should within the bound.
	Pass     bool     `json:"pass"`
	Problems []string `json:"problems"` // why not, one line each
	Config   Settings `json:"config"`
	Meta     Meta     `json:"metadata"`
	Total    Total    `json:"total"`
	// Ranks holds every rank's result, by rank; a rank that left none
	// (killed, crashed, hung) has only its rank and an error.
	Ranks []RankResult `json:"ranks"`
	Kill  *KillReport  `json:"kill,omitempty"`
	// Leaked lists files of the job left in the shared-memory directory
	// once every rank had ended; LeakChecked says whether it was looked
	// at (only when the soak started its ranks itself).
	Leaked      []string `json:"leaked"`
	LeakChecked bool     `json:"leak_checked"`
}

// Settings is the run's configuration as the report shows it.
type Settings struct {
	Backend     string  `json:"backend"`
	WorldSize   int     `json:"world_size"`
	Seed        uint64  `json:"seed"`
	Calls       int64   `json:"calls"`    // the limit; 0: none
	Duration    string  `json:"duration"` // the limit; "0s": none
	MaxBytes    int     `json:"max_bytes"`
	MaxDelay    string  `json:"max_delay"`
	DelayProb   float64 `json:"delay_probability"`
	Batch       int     `json:"batch"`
	CorruptCall int64   `json:"corrupt_call"`
	Timeout     string  `json:"timeout"` // the communicator's bound on every wait
	Capacity    int64   `json:"capacity"`
	KillRank    int     `json:"kill_rank"` // -1: no kill
	KillDuring  string  `json:"kill_during"`
	KillAfter   string  `json:"kill_after"`
	KillBound   string  `json:"kill_bound"`
}

// Meta says where and what ran.
type Meta struct {
	GoVersion string `json:"go_version"`
	Commit    string `json:"commit"`
	Hostname  string `json:"hostname"`
	CPU       string `json:"cpu"`
	OS        string `json:"os"`
	Date      string `json:"date"` // start, UTC, RFC 3339
}

// Total sums the ranks.
type Total struct {
	Calls          int64   `json:"calls"` // collective calls: the most any rank made
	Bytes          int64   `json:"bytes"` // input bytes, all ranks
	Checks         int64   `json:"checks"`
	Failures       int64   `json:"failures"` // wrong results, all ranks
	Seconds        float64 `json:"seconds"`
	CallsPerSecond float64 `json:"calls_per_second"`
	// Details are the first failures over all ranks.
	Details []Failure `json:"failure_details"`
}

// KillReport is the fault injection's outcome.
type KillReport struct {
	Rank   int    `json:"rank"`
	During string `json:"during"`
	// Phase is where the killed rank was when it died ("" when it left
	// no record: it did not kill itself).
	Phase    string  `json:"phase"`
	BoundMS  float64 `json:"bound_ms"`
	KilledAt string  `json:"killed_at"`
	// TimesToErrorMS are the survivors' times from the kill to their
	// error, by rank (-1: none, or unknown); SlowestMS is the largest
	// (-1: no survivor had an error).
	TimesToErrorMS map[int]float64 `json:"times_to_error_ms"`
	SlowestMS      float64         `json:"slowest_ms"`
	OK             bool            `json:"ok"`
}

// Setup is what Build needs besides the ranks' results.
type Setup struct {
	Config  Config
	Options detcoll.Options
	World   int
	Start   time.Time
	Leaked  []string       // nil: not checked
	Exits   map[int]string // how ranks without a result ended, if known
}

// NewMeta describes this machine and build.
func NewMeta(start time.Time) Meta {
	host, _ := os.Hostname()
	return Meta{GoVersion: runtime.Version(), Commit: bench.Commit(), Hostname: host, CPU: bench.CPUModel(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Date: start.UTC().Format(time.RFC3339)}
}

// Build makes the summary of ranks (by rank; nil: the rank left no
// result) and judges it.
func Build(s Setup, ranks []*RankResult, kill *KillRecord) *Summary {
	cfg := s.Config.withDefaults()
	sum := &Summary{Kind: Kind, SchemaVersion: SchemaVersion, Meta: NewMeta(s.Start), Leaked: s.Leaked, Problems: []string{}}
	sum.Total.Details = []Failure{}
	sum.Config = Settings{Backend: s.Options.Backend, WorldSize: s.World, Seed: cfg.Seed, Calls: cfg.Calls,
		Duration: cfg.Duration.String(), MaxBytes: cfg.MaxBytes, MaxDelay: cfg.MaxDelay.String(), DelayProb: cfg.DelayProb,
		Batch: cfg.batch(s.Options.Backend == "cuda"), CorruptCall: cfg.CorruptCall, Timeout: s.Options.Timeout.String(), Capacity: s.Options.Capacity,
		KillRank: -1}
	sum.LeakChecked = sum.Leaked != nil
	if sum.Leaked == nil {
		sum.Leaked = []string{}
	}
	problem := func(format string, args ...any) { sum.Problems = append(sum.Problems, fmt.Sprintf(format, args...)) }
	k := cfg.Kill
	if k != nil {
		sum.Config.KillRank, sum.Config.KillDuring = k.Rank, k.During
		sum.Config.KillAfter, sum.Config.KillBound = k.After.String(), k.Bound.String()
		sum.Kill = &KillReport{Rank: k.Rank, During: k.During, BoundMS: ms(k.Bound), TimesToErrorMS: map[int]float64{}, SlowestMS: -1, OK: true}
		if kill == nil {
			sum.Kill.OK = false
			problem("rank %d was to be killed but left no record of its kill", k.Rank)
		} else {
			sum.Kill.Phase = kill.Phase
			sum.Kill.KilledAt = time.Unix(0, kill.At).UTC().Format(time.RFC3339Nano)
		}
	}
	for r := range s.World {
		var res RankResult
		reported := r < len(ranks) && ranks[r] != nil
		switch {
		case reported:
			res = *ranks[r]
		case k != nil && r == k.Rank:
			res = RankResult{Rank: r, Error: "killed"}
		default:
			why := "no result: the rank died or hung"
			if e := s.Exits[r]; e != "" {
				why += " (" + e + ")"
			}
			res = RankResult{Rank: r, Error: why}
			problem("rank %d: %s", r, why)
		}
		if res.Details == nil {
			res.Details = []Failure{}
		}
		sum.Ranks = append(sum.Ranks, res)
		sum.Total.Calls = max(sum.Total.Calls, res.Calls)
		sum.Total.Bytes += res.Bytes
		sum.Total.Checks += res.Checks
		sum.Total.Failures += res.Failures
		sum.Total.Seconds = max(sum.Total.Seconds, res.Seconds)
		for _, f := range res.Details {
			if len(sum.Total.Details) < maxDetails {
				sum.Total.Details = append(sum.Total.Details, f)
			}
		}
		if res.Failures > 0 {
			problem("rank %d: %d wrong results; first: call %d (%s %s counts %v): %s", r, res.Failures,
				res.Details[0].Call, res.Details[0].Op, res.Details[0].DType, res.Details[0].Counts, res.Details[0].What)
		}
		switch {
		case k != nil && r == k.Rank:
		case k != nil && res.Survivor != nil:
			sum.Kill.TimesToErrorMS[r] = res.Survivor.TimeToErrorMS
			sum.Kill.SlowestMS = max(sum.Kill.SlowestMS, res.Survivor.TimeToErrorMS)
			if !res.Survivor.OK {
				sum.Kill.OK = false
				if res.Survivor.Error != "" {
					problem("rank %d: %s (error: %s)", r, res.Survivor.Why, firstLine(res.Survivor.Error))
				} else {
					problem("rank %d: %s", r, res.Survivor.Why)
				}
			}
		case res.Error != "" && reported:
			problem("rank %d: %s", r, firstLine(res.Error))
		}
		// Across hosts NCCL keeps what it loaded and allocated for the
		// process (its kernels among them) after its communicators are
		// destroyed: this check cannot tell that from a leak there.
		if res.Hosts <= 1 && res.DeviceFreeBefore > 0 && res.DeviceFreeAfter > 0 && res.DeviceFreeAfter < res.DeviceFreeBefore-(64<<20) {
			problem("rank %d: the GPU's free memory fell by %d MiB from before Open to after Close", r,
				(res.DeviceFreeBefore-res.DeviceFreeAfter)>>20)
		}
	}
	if k != nil && !sum.Kill.OK && len(sum.Problems) == 0 {
		problem("the kill was not handled as it should be")
	}
	if sum.Total.Seconds > 0 {
		sum.Total.CallsPerSecond = float64(sum.Total.Calls) / sum.Total.Seconds
	}
	for _, f := range sum.Leaked {
		problem("leaked: %s", f)
	}
	sum.Pass = len(sum.Problems) == 0
	return sum
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Collect reads the results that ranks wrote to dir (RunRank with
// Config.Dir), by rank (nil where a rank wrote none), and the kill
// record, if any.
func Collect(dir string, world int) ([]*RankResult, *KillRecord) {
	ranks := make([]*RankResult, world)
	for r := range ranks {
		var res RankResult
		if readJSON(rankFile(dir, r), &res) == nil {
			ranks[r] = &res
		}
	}
	var kill KillRecord
	if readJSON(killFile(dir), &kill) != nil {
		return ranks, nil
	}
	return ranks, &kill
}

// Gather collects every rank's result on every rank over c, a healthy
// communicator (for ranks that another launcher started, without a
// shared directory).
func Gather(ctx context.Context, c *detcoll.Comm, res *RankResult) ([]*RankResult, error) {
	mine, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	w := c.WorldSize()
	lens := make([]int64, w)
	if err := detcoll.AllGather(c, []int64{int64(len(mine))}, lens); err != nil {
		return nil, err
	}
	n := int(slices.Max(lens))
	buf := make([]byte, n)
	copy(buf, mine)
	all := make([]byte, w*n)
	if err := detcoll.AllGather(c, buf, all); err != nil {
		return nil, err
	}
	out := make([]*RankResult, w)
	for r := range out {
		out[r] = new(RankResult)
		if err := json.Unmarshal(all[r*n:r*n+int(lens[r])], out[r]); err != nil {
			return nil, fmt.Errorf("soak: rank %d's result: %w", r, err)
		}
	}
	return out, nil
}

// Leaks lists what is left in dir, a job's own shared-memory directory.
func Leaks(dir string) []string {
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if left == nil {
		left = []string{}
	}
	return left
}

// Write writes s as indented JSON to path.
func Write(path string, s *Summary) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Print writes the short summary: the totals and the verdict.
func Print(w io.Writer, s *Summary) {
	fmt.Fprintf(w, "soak: %s backend, %d ranks, seed %d: all ranks: %d calls in %.1f s (%.0f calls/s), %s, %d checks, %d wrong results\n",
		s.Config.Backend, s.Config.WorldSize, s.Config.Seed, s.Total.Calls, s.Total.Seconds, s.Total.CallsPerSecond,
		formatBytes(s.Total.Bytes), s.Total.Checks, s.Total.Failures)
	if k := s.Kill; k != nil {
		slowest := "none had an error"
		if k.SlowestMS >= 0 {
			slowest = fmt.Sprintf("%.2f ms", k.SlowestMS)
		}
		fmt.Fprintf(w, "kill: rank %d during %s (it died in %s); slowest survivor's time to error: %s (bound %.0f ms)\n",
			k.Rank, k.During, orNone(k.Phase), slowest, k.BoundMS)
		for _, r := range s.Ranks {
			if sv := r.Survivor; sv != nil {
				late := ""
				if sv.EnteredOpenAfterKillMS > 0 {
					late = fmt.Sprintf(" (it entered Open %.2f ms after the kill)", sv.EnteredOpenAfterKillMS)
				}
				rail := ""
				switch {
				case sv.RailAbortHung:
					rail = "; the rail's abort had not returned"
				case sv.RailAbortMS != 0:
					rail = fmt.Sprintf("; the rail's abort returned %.2f ms after the kill", sv.RailAbortMS)
				}
				fmt.Fprintf(w, "  rank %d: %s in %s after %.2f ms%s%s; close %.1f ms\n", r.Rank, verdict(sv.OK), orNone(sv.Phase), sv.TimeToErrorMS, late, rail, sv.CloseMS)
			}
		}
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "FAIL: %s\n", p)
	}
	fmt.Fprintf(w, "%s\n", strings.ToUpper(verdict(s.Pass)))
}

func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "fail"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
