// Package conformance is the one test suite that every backend runs: the
// contract's guarantees (identical bits against the independent
// reference, at every size, offset and world size; typed failures on
// every rank; nothing left behind) checked through the public API, the
// same checks on host memory (cpu) and on device memory (cuda).
//
// The suite is a table of cases (Cases). A case names itself, the world
// sizes it runs at, what each rank does (Case.Rank) and what every rank
// must report (Case.Check). A backend's tests describe the backend
// (Backend: its name, the memory its buffers live in, the sizes around
// its thresholds) and run the table:
//
//	func TestMain(m *testing.M) {
//		conformance.Main(backend, conformance.Cases())
//		os.Exit(m.Run())
//	}
//
//	func TestConformance(t *testing.T) { conformance.Run(t, backend, conformance.Cases()) }
//
// Run starts the ranks of each case as child processes (internal/testkit/ranktest)
// at each world size; a child finds its case in the same table by name
// (the one variable ranktest sets), and everything else it needs is a
// field of the case: nothing passes through environment strings but the
// job's own variables (RANK, WORLD_SIZE, ...), as detcoll run sets them.
//
// Files: suite.go (Backend, Case, Rank, Run, Main); results against the
// reference in data.go (reductions, invariance, nesting), gather.go
// (gathers, broadcasts) and nan.go (canonical NaN); failures on every
// memory in failure.go (mismatch, skipped call, kill, abort), of the host
// API in close.go (Open, Close, reopen) and story.go (one error story on
// every rank).
//
// A backend's own tests that are not conformance (CUDA graphs, say) stay
// in its package; they may use Case and Run for their multi-process
// parts. The package imports the root detcoll package, so only external
// test packages (package cpu_test) can use it.
//
// It imports the root package, internal/testkit/check and internal/testkit/ranktest, and
// never a backend's package: it tests the backends through the public API
// alone, and a backend's memory comes in as Backend.Memory. The library
// and the tools must never import it.
package conformance
