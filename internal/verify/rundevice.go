package verify

import (
	"fmt"
	"time"

	"github.com/detcoll/detcoll"
)

// RunDevice runs the checks of Run on device memory of c, a cuda
// communicator, and returns this rank's rows: every operation of Run (with
// guard bytes around each output, at every offset, and the input checked
// unchanged) plus an all-reduce of a window of the input one element off
// its alignment and one element shorter; when host, a communicator of the
// same ranks on host memory (a cpu one), is not nil, an all-reduce and a
// reduce-scatter run on both backends on the same inputs and compared; and
// when the world size is Nestable, the tensor-parallel nesting check
// (runNested) for all-reduce and reduce-scatter. Every result is compared
// bit for bit with check.ReferenceSum, the reference the cpu backend is
// tested against, or the exact concatenation.
//
// A failed check is a row with Err set. A failed call or driver call ends
// the run and is returned: the caller should then abort c, so that peers
// waiting in a kernel fail too. RunDevice locks the calling goroutine to
// its thread while it runs, and makes the device's primary context current
// there.
func RunDevice(c, host *detcoll.Comm, cfg Config) ([]Row, error) {
	if c.Device() < 0 {
		return nil, fmt.Errorf("verify: device checks need a cuda communicator, not %s", c.Options().Backend)
	}
	g, err := openGPU(c.Device())
	if err != nil {
		return nil, fmt.Errorf("verify: GPU %d: %w", c.Device(), err)
	}
	defer g.close()
	w := c.WorldSize()
	var rows []Row
	call := 0
	// add runs one row; it returns an error that ends the run.
	add := func(name string, dt detcoll.DType, bytes int, run func() (time.Duration, error, error)) error {
		row := Row{Op: name, DType: dt, Bytes: bytes}
		var err error
		row.PerCall, row.Err, err = run()
		if err != nil {
			return fmt.Errorf("verify: %s, %v, %d bytes: %w", name, dt, bytes, err)
		}
		rows = append(rows, row)
		return nil
	}

	reduce := deviceOps(reduceOps, windowOp)
	if host != nil {
		reduce = append(reduce, crossOps()...)
	}
	for _, dt := range cfg.DTypes {
		for _, op := range reduce {
			for _, sz := range cfg.Sizes {
				call++
				n := elements(sz, dt, operation{inScale: op.inScale}, w)
				err := add(op.name, dt, n*dt.Size()*op.inScale(w), func() (time.Duration, error, error) {
					return op.run(c, host, g, dt, n, cfg.Seed, call)
				})
				if err != nil {
					return rows, err
				}
			}
		}
		if !Nestable(w) {
			continue
		}
		for _, scatter := range []bool{false, true} {
			name, scale := "AllReduce/nest8", 1
			if scatter {
				name, scale = "ReduceScatter/nest8", w
			}
			for _, sz := range cfg.Sizes {
				call++
				n := elements(sz, dt, operation{inScale: func(int) int { return scale }}, w)
				err := add(name, dt, n*dt.Size()*scale, func() (time.Duration, error, error) {
					return runNested(c, g, scatter, dt, n, cfg.Seed, call)
				})
				if err != nil {
					return rows, err
				}
			}
		}
	}
	for _, op := range deviceOps(gatherOps) {
		for _, sz := range cfg.Sizes {
			call++
			n := sz + 1 // odd byte counts
			err := add(op.name, detcoll.TypeUint8, n, func() (time.Duration, error, error) {
				return op.run(c, host, g, detcoll.TypeUint8, n, cfg.Seed, call)
			})
			if err != nil {
				return rows, err
			}
		}
	}
	return rows, nil
}
