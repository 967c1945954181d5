package proto

import (
	"testing"

	"github.com/detcoll/detcoll/internal/core/base"
)

// arrivingView is a peer's word that reaches the target after its first
// read, as live shared memory may between Decide's two passes.
type arrivingView struct{ reads int }

func (v *arrivingView) Word(int) uint64 {
	v.reads++
	if v.reads == 1 {
		return 0
	}
	return 1
}

func (v *arrivingView) Failure(int) (base.Failure, bool) { return base.Failure{}, false }

// TestDecideWordArrivesDuringTimeout: a word that arrives while Decide
// builds a timeout's list of missing peers is progress, not a timeout
// naming nobody (that indexed an empty list and panicked).
func TestDecideWordArrivesDuringTimeout(t *testing.T) {
	w := Wait{Self: 0, World: 2, Target: 1, Op: base.OpAllReduce, Seq: 3}
	if got := Decide(w, &arrivingView{}, nil, true); got.Outcome != Arrived {
		t.Errorf("Decide = %+v; want Arrived", got)
	}
}
