package devmem

import (
	"bytes"
	"fmt"

	"github.com/detcoll/detcoll"
)

// busIDLen is the bytes of a GPU's PCI bus id that ranks exchange.
const busIDLen = 32

// GPUsOf gathers, over host (every rank calls it), the GPU each rank runs
// on (g's, here) and returns how many distinct GPUs the ranks use and the
// most ranks on one of them: for reports that must not pass ranks that
// shared a GPU off as ranks on GPUs of their own.
func GPUsOf(host *detcoll.Comm, g *GPU) (gpus, mostPerGPU int, err error) {
	id, err := g.Device.PCIBusID()
	if err != nil {
		return 0, 0, err
	}
	mine := make([]uint8, busIDLen)
	copy(mine, id)
	all := make([]uint8, busIDLen*host.WorldSize())
	if err := detcoll.AllGather(host, mine, all); err != nil {
		return 0, 0, fmt.Errorf("gather the GPUs' bus ids: %w", err)
	}
	n := map[string]int{}
	for r := range host.WorldSize() {
		n[string(bytes.TrimRight(all[r*busIDLen:(r+1)*busIDLen], "\x00"))]++
	}
	for _, k := range n {
		mostPerGPU = max(mostPerGPU, k)
	}
	return len(n), mostPerGPU, nil
}
