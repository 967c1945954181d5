//go:build !detcoll_noaot

package cuda

import (
	"embed"
	"io/fs"
)

//go:embed aot
var aotDir embed.FS

// aotFiles holds the kernels built ahead of time, aot/ARCH-wW.gz.
var aotFiles = must(fs.Sub(aotDir, "aot"))

func must(f fs.FS, err error) fs.FS {
	if err != nil {
		panic(err)
	}
	return f
}
