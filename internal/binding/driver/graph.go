//go:build cgo && linux

package driver

/*
#include "cudrv.h"
*/
import "C"

// Instantiate makes an executable graph from g (no flags). g may be
// destroyed afterwards; the executable graph is independent of it.
func (g Graph) Instantiate() (GraphExec, error) {
	var x C.CUgraphExec
	if r := C.dc_cuGraphInstantiateWithFlags(&x, C.CUgraph(g), 0); r != 0 {
		return 0, cuErr(r, "cuGraphInstantiateWithFlags", uintptr(g), 0)
	}
	return GraphExec(x), nil
}

// Destroy destroys the graph.
func (g Graph) Destroy() error {
	if r := C.dc_cuGraphDestroy(C.CUgraph(g)); r != 0 {
		return cuErr(r, "cuGraphDestroy", uintptr(g))
	}
	return nil
}

// Launch queues one replay of the graph on s.
func (x GraphExec) Launch(s Stream) error {
	if r := C.dc_cuGraphLaunch(C.CUgraphExec(x), C.CUstream(s)); r != 0 {
		return cuErr(r, "cuGraphLaunch", uintptr(x), uintptr(s))
	}
	return nil
}

// Destroy destroys the executable graph; queued replays still complete.
func (x GraphExec) Destroy() error {
	if r := C.dc_cuGraphExecDestroy(C.CUgraphExec(x)); r != 0 {
		return cuErr(r, "cuGraphExecDestroy", uintptr(x))
	}
	return nil
}
