package bench

import (
	"os"
	"path/filepath"

	"github.com/detcoll/detcoll"
	"github.com/detcoll/detcoll/internal/tools/devmem"
	"github.com/detcoll/detcoll/internal/tools/report"
)

// shareGPUs finds out, with every rank of host, whether ranks share GPUs
// and how (MPS, mpsRunning, or time-sliced). Every rank must call it; they
// all get the same answer.
func (d *CUDA) shareGPUs(host *detcoll.Comm) error {
	_, most, err := devmem.GPUsOf(host, d.g.gpu)
	if err != nil {
		return err
	}
	d.perGPU = most
	if most > 1 {
		d.sharing = report.SharingTimeSliced
		if mpsRunning() {
			d.sharing = report.SharingMPS
		}
	}
	return nil
}

// mpsRunning reports whether an MPS control daemon listens where this
// process's CUDA looks for one (CUDA_MPS_PIPE_DIRECTORY, /tmp/nvidia-mps
// by default): then the driver made this process an MPS client, and the
// kernels of ranks sharing a GPU run at once. The driver API does not
// say so itself.
func mpsRunning() bool {
	dir := os.Getenv("CUDA_MPS_PIPE_DIRECTORY")
	if dir == "" {
		dir = "/tmp/nvidia-mps"
	}
	fi, err := os.Stat(filepath.Join(dir, "control"))
	return err == nil && fi.Mode()&os.ModeSocket != 0
}
