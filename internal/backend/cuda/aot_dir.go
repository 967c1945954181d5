//go:build detcoll_noaot

package cuda

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// aotFiles: a binary built with -tags detcoll_noaot reads the kernels
// built ahead of time from the folder DETCOLL_AOT_DIR names (a checkout's
// internal/backend/cuda/aot), and without it compiles them. The device
// runs use it: the GPU machine takes the binaries and the repository in
// one transfer of bounded size, which holds the files once rather than
// once more in every binary (tools/gpu-build.sh).
var aotFiles fs.FS = aotFolder(settings.Get(settings.AOTDir))

func aotFolder(dir string) fs.FS {
	if dir == "" {
		return noFiles{}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // as the caller meant it, whatever the working directory later
	}
	return os.DirFS(dir)
}

type noFiles struct{}

func (noFiles) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("no kernels built ahead of time: DETCOLL_AOT_DIR is not set")}
}
