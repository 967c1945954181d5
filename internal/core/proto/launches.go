package proto

// Launches cuts the schedule of path p into the launches of a GPU kernel
// (staged as for Schedule). A launch's blocks run side by side and nothing
// orders them; only the stream orders launches. So a new launch starts at
// every Await that follows work or a publish: a wait is where everything
// the rank did before must be finished by all its blocks, not just the
// waiting one. An Await that follows another Await stays in the launch.
//
// LL is one launch by construction: its lines carry the stage with the
// data, so it never waits for work of its own. Alone never waits.
//
// It returns nil where Schedule does. The launches share the schedule's
// backing array: callers must not change them.
func Launches(p Path, staged bool) [][]Step {
	steps := Schedule(p, staged)
	if steps == nil {
		return nil
	}
	if p == LL || p == Alone {
		return [][]Step{steps}
	}
	var out [][]Step
	start := 0
	for i, s := range steps {
		if s.Action == Await && i > start && steps[i-1].Action != Await {
			out = append(out, steps[start:i:i])
			start = i
		}
	}
	return append(out, steps[start:])
}
