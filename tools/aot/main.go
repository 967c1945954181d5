// Command aot builds the cuda backend's kernels ahead of time for the GPUs
// detcoll knows (internal/backend/cuda/aot.go) and writes them to -out, which is
// internal/backend/cuda/aot in a checkout. It needs NVRTC, not a GPU. With -cache
// it also fills this machine's kernel cache (DETCOLL_CACHE_DIR), so that
// a binary built before the files finds the kernels there.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/detcoll/detcoll/internal/backend/cuda"
)

func main() {
	out := flag.String("out", "internal/backend/cuda/aot", "the folder to write the kernels to")
	jobs := flag.Int("j", runtime.NumCPU(), "compiles at once")
	cache := flag.Bool("cache", false, "also store the kernels in this machine's kernel cache (DETCOLL_CACHE_DIR)")
	archs := flag.String("archs", strings.Join(cuda.AheadOfTimeArchs, ","), "architectures, a list")
	worlds := flag.String("worlds", join(cuda.AheadOfTimeWorlds), "world sizes, a list")
	flag.Parse()
	var ws []int
	for _, f := range strings.Split(*worlds, ",") {
		w, err := strconv.Atoi(f)
		if err != nil || w < 1 {
			fmt.Fprintf(os.Stderr, "aot: -worlds %q: want world sizes, such as 1,2,4,8\n", *worlds)
			os.Exit(2)
		}
		ws = append(ws, w)
	}
	as := strings.Split(*archs, ",")
	start := time.Now()
	skipped, err := cuda.BuildAheadOfTime(*out, as, ws, *jobs, *cache)
	for _, s := range skipped {
		fmt.Fprintf(os.Stderr, "aot: skipped %s\n", s)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "aot: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "aot: %d architectures x %d world sizes in %v\n", len(as), len(ws), time.Since(start).Round(time.Millisecond))
}

func join(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
