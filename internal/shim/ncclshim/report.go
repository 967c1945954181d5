package ncclshim

import (
	"encoding/json"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/detcoll/detcoll/internal/binding/nccl"
)

// The record that DETCOLL_NCCL_REPORT asks for: how many reductions
// detcoll served and how many went to the real NCCL (or were refused),
// per operation, element type, op and reason, and the host time the
// served ones took in the shim; written as JSON at the process's exit
// (the C boundary calls WriteReport). Without the variable nothing is
// counted: a nil *record does nothing.

// callKey names a kind of call in the record.
type callKey struct {
	kind Kind
	dt   nccl.DataType
	op   nccl.RedOp // premulSum for every operator made through the library
}

type outcome string

const (
	outcomeServed  outcome = "served"  // detcoll's bits
	outcomeExact   outcome = "exact"   // the real NCCL's, which are the same in any order (why detcoll did not serve it: the reason)
	outcomeHanded  outcome = "handed"  // the real NCCL's: not deterministic
	outcomeRefused outcome = "refused" // strict mode: failed with ncclInvalidUsage
)

type rowKey struct {
	callKey
	outcome outcome
	reason  string
}

type row struct {
	calls int64
	// Served calls: the time from the shim's entry to its return, and
	// the part of it in detcoll's calls, summed.
	shimNS, detcollNS int64
}

type record struct {
	mu    sync.Mutex
	rows  map[rowKey]*row
	comms []commRecord
}

// commRecord is one communicator's setup, in the record.
type commRecord struct {
	World       int     `json:"world"`
	Rank        int     `json:"rank"`
	Device      int     `json:"device"`
	Served      bool    `json:"served"`
	Hosts       int     `json:"hosts,omitempty"` // machines it is served across (1: one)
	Why         string  `json:"why,omitempty"`
	Capacity    int64   `json:"capacity_bytes,omitempty"`
	BufferBytes int64   `json:"buffer_bytes,omitempty"`
	SetupMS     float64 `json:"setup_ms"`
}

func newRecord() *record { return &record{rows: map[rowKey]*row{}} }

// now is the start of a served call's time, when anything is recorded.
func (r *record) now() time.Time {
	if r == nil {
		return time.Time{}
	}
	return time.Now()
}

func (r *record) count(k callKey, o outcome, reason string) {
	if r == nil {
		return
	}
	r.add(rowKey{k, o, reason}, 0, 0)
}

// served counts a served call that arrived at start and was handed to
// detcoll at queued.
func (r *record) served(k callKey, start, queued time.Time) {
	if r == nil {
		return
	}
	end := time.Now()
	r.add(rowKey{k, outcomeServed, ""}, end.Sub(start).Nanoseconds(), end.Sub(queued).Nanoseconds())
}

func (r *record) add(k rowKey, shim, dc int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.rows[k]
	if w == nil {
		w = &row{}
		r.rows[k] = w
	}
	w.calls++
	w.shimNS += shim
	w.detcollNS += dc
}

func (r *record) setup(cr commRecord) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.comms = append(r.comms, cr)
	r.mu.Unlock()
}

// Report is the record as written.
type Report struct {
	Schema    int              `json:"schema"`
	PID       int              `json:"pid"`
	Mode      string           `json:"mode"`
	Calls     []ReportRow      `json:"calls"`
	Forwarded map[string]int64 `json:"forwarded,omitempty"`
	// BoundaryUSPerCall is the mean time a reduction the Go side made
	// took in the library's C function, from its entry to its return:
	// beyond ShimUSPerCall, the crossing from C into Go and back.
	BoundaryUSPerCall float64      `json:"boundary_us_per_call,omitempty"`
	Communicators     []commRecord `json:"communicators"`
	DiscardBytes      int64        `json:"discard_bytes"`
	GatheringBytes    int64        `json:"gathering_bytes"`
}

// ReportRow counts one kind of call with one outcome.
type ReportRow struct {
	Operation string `json:"operation"`
	DType     string `json:"dtype"`
	Op        string `json:"op"`
	Outcome   string `json:"outcome"`
	Reason    string `json:"reason,omitempty"`
	Calls     int64  `json:"calls"`
	// ShimUSPerCall is the mean time a served call spent in the Go side
	// of the library, from its arrival to its return; DetcollUSPerCall
	// the part of it in detcoll's device calls (validation, the plan,
	// the launches).
	ShimUSPerCall    float64 `json:"shim_us_per_call,omitempty"`
	DetcollUSPerCall float64 `json:"detcoll_us_per_call,omitempty"`
}

// WriteReport writes the record to the file the settings name, with the
// counts of the calls the C boundary forwarded untouched; it does nothing
// without one, or when this process made no NCCL call (a launcher such as
// torchrun, preloaded with its ranks, must not overwrite theirs). A "%p"
// in the name is this process's id: one file per rank.
func (s *Shim) WriteReport(forwarded map[string]int64, boundaryUS float64) error {
	if s.rec == nil {
		return nil
	}
	s.rec.mu.Lock()
	empty := len(s.rec.rows) == 0 && len(s.rec.comms) == 0
	s.rec.mu.Unlock()
	if empty && len(forwarded) == 0 {
		return nil
	}
	rep := Report{Schema: 1, PID: s.getpid(), Mode: "delegate", Forwarded: forwarded, BoundaryUSPerCall: boundaryUS}
	if s.settings.Mode == Strict {
		rep.Mode = "strict"
	}
	s.rec.mu.Lock()
	for k, w := range s.rec.rows {
		rr := ReportRow{Operation: k.kind.String(), DType: k.dt.String(), Op: opName(k.op), Outcome: string(k.outcome),
			Reason: k.reason, Calls: w.calls}
		if k.outcome == outcomeServed && w.calls > 0 {
			rr.ShimUSPerCall = float64(w.shimNS) / float64(w.calls) / 1e3
			rr.DetcollUSPerCall = float64(w.detcollNS) / float64(w.calls) / 1e3
		}
		rep.Calls = append(rep.Calls, rr)
	}
	rep.Communicators = append([]commRecord{}, s.rec.comms...)
	s.rec.mu.Unlock()
	sort.Slice(rep.Calls, func(i, j int) bool {
		a, b := rep.Calls[i], rep.Calls[j]
		if a.Operation != b.Operation {
			return a.Operation < b.Operation
		}
		if a.DType != b.DType {
			return a.DType < b.DType
		}
		if a.Op != b.Op {
			return a.Op < b.Op
		}
		if a.Outcome != b.Outcome {
			return a.Outcome < b.Outcome
		}
		return a.Reason < b.Reason
	})
	s.mu.Lock()
	for _, d := range s.discard {
		rep.DiscardBytes += d.size
	}
	s.mu.Unlock()
	rep.GatheringBytes = s.gathering.Load()
	b, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	path := strings.ReplaceAll(s.settings.Report, "%p", strconv.Itoa(rep.PID))
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
