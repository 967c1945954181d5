package cpu

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// shmDir returns where segments live: a tmpfs, /dev/shm, unless
// DETCOLL_SHM_DIR names another directory (tests give each job its own, to
// check that nothing is left behind).
func shmDir() string {
	if d := settings.Get(settings.SHMDir); d != "" {
		return d
	}
	return "/dev/shm"
}

const shmPrefix = "detcoll-"

// newSegmentName returns a name for a segment of this process that nobody
// can guess. Ranks tell each other their names before they create the
// segments, so that the survivors of a rank that dies right after creating
// its own can remove it.
func newSegmentName() (string, error) {
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s%d-%s", shmPrefix, os.Getpid(), hex.EncodeToString(rnd[:])), nil
}

// createSegment makes the segment file called name, of size bytes, readable
// and writable by this user only, and maps it.
func createSegment(name string, size int64) (mem []byte, err error) {
	path := filepath.Join(shmDir(), name)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create shared memory %s: %w", path, err)
	}
	defer unix.Close(fd)
	// Fallocate, not just Ftruncate: a tmpfs too small for the segment
	// must fail here, with a message, not later with SIGBUS on first touch.
	if err := unix.Fallocate(fd, 0, 0, size); err != nil {
		unix.Unlink(path)
		return nil, fmt.Errorf("reserve %d bytes of shared memory in %s (is it large enough? Options.Capacity sets the size): %w",
			size, shmDir(), err)
	}
	mem, err = unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Unlink(path)
		return nil, fmt.Errorf("map shared memory %s: %w", path, err)
	}
	return mem, nil
}

// openSegment maps a peer's segment by the name it published.
func openSegment(name string, size int64) ([]byte, error) {
	if !validName(name) {
		return nil, fmt.Errorf("bad shared memory name %q", name)
	}
	path := filepath.Join(shmDir(), name)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open peer shared memory %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat peer shared memory %s: %w", path, err)
	}
	if st.Size != size {
		return nil, fmt.Errorf("peer shared memory %s has %d bytes, want %d", path, st.Size, size)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map peer shared memory %s: %w", path, err)
	}
	return mem, nil
}

// anonymousSegment maps private memory for a communicator of one rank,
// which has nobody to share with.
func anonymousSegment(size int64) ([]byte, error) {
	return unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
}

// unlinkSegment removes a segment's name; mappings stay valid. A name that
// is already gone is not an error: several ranks may race to remove it.
func unlinkSegment(name string) error {
	if !validName(name) {
		return nil
	}
	err := unix.Unlink(filepath.Join(shmDir(), name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func unmap(mem []byte) {
	if mem != nil {
		unix.Munmap(mem)
	}
}

// validName accepts only names createSegment makes, so a peer cannot make us
// open or unlink anything else.
func validName(name string) bool {
	_, ok := segmentOwner(name)
	return ok
}

// segmentOwner returns the pid in a segment's name.
func segmentOwner(name string) (pid int, ok bool) {
	rest, ok := strings.CutPrefix(name, shmPrefix)
	if !ok {
		return 0, false
	}
	pidPart, hexPart, ok := strings.Cut(rest, "-")
	if !ok || len(hexPart) != 32 {
		return 0, false
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(pidPart)
	return pid, err == nil && pid > 0
}

// sweepStale removes segments whose creator is dead: should every rank of a
// job die while setting up (so no survivor removes a dead rank's segment),
// the next communicator on the host cleans up.
func sweepStale() {
	entries, err := os.ReadDir(shmDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := segmentOwner(e.Name())
		if ok && unix.Kill(pid, 0) == unix.ESRCH {
			unix.Unlink(filepath.Join(shmDir(), e.Name()))
		}
	}
}
