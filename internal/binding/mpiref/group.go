//go:build mpi && cgo

package mpiref

/*
#cgo pkg-config: ompi-c
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

static int mr_split(int color, int key, MPI_Comm *out) {
	int rc = MPI_Comm_split(MPI_COMM_WORLD, color, key, out);
	if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
	return rc;
}
static int mr_split_shared(MPI_Comm *out) {
	int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, out);
	if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
	return rc;
}
static int mr_comm_rank(MPI_Comm c, int *r) { return MPI_Comm_rank(c, r); }
static int mr_comm_size(MPI_Comm c, int *s) { return MPI_Comm_size(c, s); }
static int mr_iallgather(void *buf, int n, MPI_Comm c, MPI_Request *req) {
	return MPI_Iallgather(buf, n, MPI_BYTE, (char *)buf + n, n, MPI_BYTE, c, req);
}
static int mr_test(MPI_Request *req, int *done) { return MPI_Test(req, done, MPI_STATUS_IGNORE); }
static int mr_exchange(void *buf, int sn, int rn, int peer, MPI_Comm c, MPI_Request *reqs) {
	int rc = MPI_Irecv((char *)buf + sn, rn, MPI_BYTE, peer, 7, c, &reqs[0]);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Isend(buf, sn, MPI_BYTE, peer, 7, c, &reqs[1]);
}
static int mr_testall(MPI_Request *reqs, int *done) { return MPI_Testall(2, reqs, done, MPI_STATUSES_IGNORE); }
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// Group is a communicator of some of MPI_COMM_WORLD's ranks (MPI_Comm_split).
// Its AllGather moves bytes through memory of its own (MPI holds a
// non-blocking call's buffers past the call, which Go's may not be) and
// waits by polling, so that a wait is bounded by a context.
type Group struct {
	comm       C.MPI_Comm
	rank, size int

	mu  sync.Mutex // one call at a time; guards buf
	buf unsafe.Pointer
	cap int
	// stuck: a call that never finished (its context ended) still owns
	// buf: MPI cannot cancel a collective, so the group is unusable.
	stuck bool
}

// Split is MPI_Comm_split of the world: the ranks of one color, ordered by
// key.
func (w *World) Split(color, key int) (*Group, error) {
	var c C.MPI_Comm
	if rc := C.mr_split(C.int(color), C.int(key), &c); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_split", rc)
	}
	return newGroup(c)
}

// SharedHosts is MPI_Comm_split_type of the world by shared memory: the
// ranks of this rank's node.
func (w *World) SharedHosts() (*Group, error) {
	var c C.MPI_Comm
	if rc := C.mr_split_shared(&c); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_split_type", rc)
	}
	return newGroup(c)
}

func newGroup(c C.MPI_Comm) (*Group, error) {
	var r, s C.int
	if rc := C.mr_comm_rank(c, &r); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_rank", rc)
	}
	if rc := C.mr_comm_size(c, &s); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_size", rc)
	}
	return &Group{comm: c, rank: int(r), size: int(s)}, nil
}

// Rank is this rank's rank in the group.
func (g *Group) Rank() int { return g.rank }

// Size is the group's number of ranks.
func (g *Group) Size() int { return g.size }

// AllGather gathers len(send) bytes from every rank of the group into recv
// (Size() x len(send) bytes), in group order (MPI_Iallgather). It returns
// when ctx ends first; the group is then unusable (MPI cannot cancel a
// collective) and every later call fails.
func (g *Group) AllGather(ctx context.Context, send, recv []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(send)
	if len(recv) != g.size*n || n > 1<<30 {
		return fmt.Errorf("mpiref: AllGather of %d bytes into %d, group of %d", n, len(recv), g.size)
	}
	if g.stuck {
		return fmt.Errorf("mpiref: AllGather after one that never finished")
	}
	if need := (g.size + 1) * max(n, 1); need > g.cap {
		C.free(g.buf)
		g.buf, g.cap = C.malloc(C.size_t(need)), need
	}
	if n > 0 {
		C.memcpy(g.buf, unsafe.Pointer(unsafe.SliceData(send)), C.size_t(n))
	}
	var req C.MPI_Request
	if rc := C.mr_iallgather(g.buf, C.int(n), g.comm, &req); rc != C.MPI_SUCCESS {
		g.stuck = true // as after any failed call: see wait
		return mpiError("MPI_Iallgather", rc)
	}
	if err := g.wait(ctx, "AllGather", func(done *C.int) C.int { return C.mr_test(&req, done) }); err != nil {
		return err
	}
	if n > 0 {
		copy(recv, unsafe.Slice((*byte)(unsafe.Add(g.buf, n)), g.size*n))
	}
	return nil
}

// Exchange sends send to the group's rank peer and receives len(recv)
// bytes from it at once (MPI_Isend and MPI_Irecv), bounded by ctx as
// AllGather.
func (g *Group) Exchange(ctx context.Context, peer int, send, recv []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if peer < 0 || peer >= g.size || len(send) > 1<<30 || len(recv) > 1<<30 {
		return fmt.Errorf("mpiref: Exchange of %d and %d bytes with %d, group of %d", len(send), len(recv), peer, g.size)
	}
	if g.stuck {
		return fmt.Errorf("mpiref: Exchange after a call that never finished")
	}
	if need := max(len(send)+len(recv), 1); need > g.cap {
		C.free(g.buf)
		g.buf, g.cap = C.malloc(C.size_t(need)), need
	}
	if len(send) > 0 {
		C.memcpy(g.buf, unsafe.Pointer(unsafe.SliceData(send)), C.size_t(len(send)))
	}
	var reqs [2]C.MPI_Request
	if rc := C.mr_exchange(g.buf, C.int(len(send)), C.int(len(recv)), C.int(peer), g.comm, &reqs[0]); rc != C.MPI_SUCCESS {
		g.stuck = true // the receive may be posted, into g.buf
		return mpiError("MPI_Isend/MPI_Irecv", rc)
	}
	if err := g.wait(ctx, "Exchange", func(done *C.int) C.int { return C.mr_testall(&reqs[0], done) }); err != nil {
		return err
	}
	if len(recv) > 0 {
		copy(recv, unsafe.Slice((*byte)(unsafe.Add(g.buf, len(send))), len(recv)))
	}
	return nil
}

// wait polls test until the call is done: a brief spin (a round trip on
// one host is microseconds), then sleeps between polls, doubling up to a
// millisecond. When ctx ends first, or a test fails, the group is stuck:
// MPI cannot cancel the call, which may still own g.buf.
func (g *Group) wait(ctx context.Context, what string, test func(*C.int) C.int) error {
	start, nap := time.Now(), time.Duration(0)
	for {
		var done C.int
		if rc := test(&done); rc != C.MPI_SUCCESS {
			g.stuck = true
			return mpiError("MPI_Test", rc)
		}
		if done != 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			g.stuck = true
			return fmt.Errorf("mpiref: %s: %w", what, err)
		}
		if time.Since(start) > 50*time.Microsecond {
			nap = min(max(2*nap, time.Microsecond), time.Millisecond)
			time.Sleep(nap)
		}
	}
}
