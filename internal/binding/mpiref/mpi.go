//go:build mpi && cgo

package mpiref

/*
#cgo pkg-config: ompi-c
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

// mr_init initialises MPI for serialized threads and makes errors return
// instead of aborting the job.
static int mr_init(int *provided) {
	// Leave SIGSEGV, SIGBUS, SIGFPE and SIGABRT to the Go runtime.
	setenv("OMPI_MCA_opal_signal", "", 0);
	int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
	if (rc == MPI_SUCCESS) {
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	}
	return rc;
}

static MPI_Datatype mr_type(int t) {
	switch (t) {
	case 1: return MPI_FLOAT;
	case 2: return MPI_DOUBLE;
	}
	return MPI_BYTE;
}

static MPI_Op mr_op(int op) {
	switch (op) {
	case 1: return MPI_MAX;
	case 2: return MPI_MIN;
	}
	return MPI_SUM;
}

static int mr_allreduce(void *in, void *out, int n, int t, int op) {
	return MPI_Allreduce(in, out, n, mr_type(t), mr_op(op), MPI_COMM_WORLD);
}
static int mr_reduce_scatter_block(void *in, void *out, int n, int t, int op) {
	return MPI_Reduce_scatter_block(in, out, n, mr_type(t), mr_op(op), MPI_COMM_WORLD);
}
static int mr_allgather(void *in, void *out, int n) {
	return MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, MPI_COMM_WORLD);
}
static int mr_bcast(void *buf, int n, int root) {
	return MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD);
}
static int mr_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static int mr_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int mr_size(int *s) { return MPI_Comm_size(MPI_COMM_WORLD, s); }
static int mr_finalize(void) { return MPI_Finalize(); }

static void mr_version(char *buf, int len) {
	int n = 0;
	char v[MPI_MAX_LIBRARY_VERSION_STRING];
	if (MPI_Get_library_version(v, &n) != MPI_SUCCESS) n = 0;
	v[n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1] = 0;
	strncpy(buf, v, len - 1);
	buf[len - 1] = 0;
}

static void mr_error_string(int rc, char *buf, int len) {
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;
	if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS) n = 0;
	s[n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1] = 0;
	strncpy(buf, s, len - 1);
	buf[len - 1] = 0;
}
*/
import "C"

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"
)

// Built reports whether this binary has the MPI reference.
const Built = true

// World is this process's MPI_COMM_WORLD. Its methods must not be called
// concurrently (see the package comment on threads).
type World struct {
	rank, size int
	version    string
}

var (
	initMu    sync.Mutex // guards initState
	initState int        // 0 never initialised, 1 initialised, 2 finalised
	theWorld  *World     // set with initState 1
)

// Init initialises MPI, or returns the World of an earlier Init: MPI
// initialises once per process and cannot start again after Finalize.
func Init() (*World, error) {
	initMu.Lock()
	defer initMu.Unlock()
	switch initState {
	case 1:
		return theWorld, nil // a second user of the process's MPI (package mpi beside the reference)
	case 2:
		return nil, fmt.Errorf("mpiref: Init after Finalize (MPI initialises once per process)")
	}
	var provided C.int
	if rc := C.mr_init(&provided); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Init_thread", rc)
	}
	initState = 1
	if provided < C.MPI_THREAD_SERIALIZED {
		C.mr_finalize()
		initState = 2
		return nil, fmt.Errorf("mpiref: MPI provides thread level %d, below MPI_THREAD_SERIALIZED", int(provided))
	}
	var rank, size C.int
	if rc := C.mr_rank(&rank); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_rank", rc)
	}
	if rc := C.mr_size(&size); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_size", rc)
	}
	var buf [512]C.char
	C.mr_version(&buf[0], C.int(len(buf)))
	v, _, _ := strings.Cut(C.GoString(&buf[0]), "\n")
	theWorld = &World{rank: int(rank), size: int(size), version: strings.TrimSpace(v)}
	return theWorld, nil
}

// Rank is this process's rank in MPI_COMM_WORLD.
func (w *World) Rank() int { return w.rank }

// Size is the number of ranks in MPI_COMM_WORLD.
func (w *World) Size() int { return w.size }

// Version is the first line of MPI_Get_library_version, such as "Open MPI
// v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26,
// 2022".
func (w *World) Version() string { return w.version }

// Finalize ends MPI for this process. It is collective in practice: every
// rank must call it.
func (w *World) Finalize() error {
	initMu.Lock()
	defer initMu.Unlock()
	if initState != 1 {
		return nil
	}
	initState = 2
	if rc := C.mr_finalize(); rc != C.MPI_SUCCESS {
		return mpiError("MPI_Finalize", rc)
	}
	return nil
}

// Barrier is MPI_Barrier.
func (w *World) Barrier() error {
	return check("MPI_Barrier", C.mr_barrier())
}

// Allreduce is MPI_Allreduce with op of in into out (len(in) bytes of dt
// each).
func (w *World) Allreduce(dt DType, op Op, in, out []byte) error {
	n, err := count(dt, len(in))
	if err != nil || len(out) != len(in) {
		return lengths("MPI_Allreduce", err, len(in), len(out))
	}
	return check("MPI_Allreduce", C.mr_allreduce(ptr(in), ptr(out), n, C.int(dt), C.int(op)))
}

// ReduceScatterBlock is MPI_Reduce_scatter_block with op: in holds Size()
// blocks of len(out) bytes.
func (w *World) ReduceScatterBlock(dt DType, op Op, in, out []byte) error {
	n, err := count(dt, len(out))
	if err != nil || len(in) != w.size*len(out) {
		return lengths("MPI_Reduce_scatter_block", err, len(in), len(out))
	}
	return check("MPI_Reduce_scatter_block", C.mr_reduce_scatter_block(ptr(in), ptr(out), n, C.int(dt), C.int(op)))
}

// Allgather is MPI_Allgather of bytes: out holds Size() blocks of len(in).
func (w *World) Allgather(in, out []byte) error {
	n, err := count(0, len(in))
	if err != nil || len(out) != w.size*len(in) {
		return lengths("MPI_Allgather", err, len(in), len(out))
	}
	return check("MPI_Allgather", C.mr_allgather(ptr(in), ptr(out), n))
}

// Bcast is MPI_Bcast of bytes from root.
func (w *World) Bcast(buf []byte, root int) error {
	n, err := count(0, len(buf))
	if err != nil || root < 0 || root >= w.size {
		return fmt.Errorf("mpiref: MPI_Bcast of %d bytes from root %d of %d: %v", len(buf), root, w.size, err)
	}
	return check("MPI_Bcast", C.mr_bcast(ptr(buf), n, C.int(root)))
}

// count converts a byte length to an MPI count of dt (bytes for 0).
func count(dt DType, bytes int) (C.int, error) {
	size := 1
	if dt != 0 {
		if size = dt.size(); size == 0 {
			return 0, fmt.Errorf("unknown element type %d", int(dt))
		}
	}
	if bytes%size != 0 || bytes/size > math.MaxInt32 {
		return 0, fmt.Errorf("%d bytes are not a whole count (<= 2^31-1) of %d-byte elements", bytes, size)
	}
	return C.int(bytes / size), nil
}

func lengths(call string, err error, in, out int) error {
	if err == nil {
		err = fmt.Errorf("mismatched lengths")
	}
	return fmt.Errorf("mpiref: %s with %d bytes in, %d out: %w", call, in, out, err)
}

// ptr passes a Go buffer to C for the length of one blocking call, which
// the cgo rules allow: it holds no Go pointers.
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

func check(call string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	return mpiError(call, rc)
}

func mpiError(call string, rc C.int) error {
	var buf [512]C.char
	C.mr_error_string(rc, &buf[0], C.int(len(buf)))
	return fmt.Errorf("mpiref: %s: %s (error %d)", call, C.GoString(&buf[0]), int(rc))
}
