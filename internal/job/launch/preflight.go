package launch

import (
	"fmt"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// NeedCUDA says, before a tool starts ranks of the cuda backend, whether
// this machine has a CUDA driver: without one every rank would fail alike,
// each with the same long error, where one line says it.
func NeedCUDA() error {
	if _, _, err := driver.ProbeCUDA(); err != nil {
		return fmt.Errorf("--backend cuda: %w", err)
	}
	return nil
}
