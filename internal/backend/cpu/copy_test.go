package cpu

import (
	"bytes"
	"testing"
)

// copyCached must be copy, whatever the length against its pieces and the
// 1 MiB at which it starts cutting.
func TestCopyCached(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3*cachedPiece + 7, 5 << 20} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + i>>12)
		}
		for _, cached := range []bool{false, true} {
			dst := make([]byte, n+3)
			dst[n], dst[n+1], dst[n+2] = 0xA5, 0xA5, 0xA5
			copyCached(dst[:n], src, cached)
			if !bytes.Equal(dst[:n], src) || dst[n] != 0xA5 || dst[n+1] != 0xA5 || dst[n+2] != 0xA5 {
				t.Errorf("n=%d cached=%v: copy differs or wrote past the end", n, cached)
			}
		}
	}
}
