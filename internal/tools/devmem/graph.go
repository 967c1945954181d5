package devmem

import (
	"errors"

	"github.com/detcoll/detcoll/internal/binding/driver"
)

// Capture records what body queues on s into a CUDA graph, in the thread-
// local capture mode (other threads' work is not captured, nor refused),
// and instantiates it. The capture ends whatever body returns; its error
// comes first. The caller destroys the GraphExec.
func Capture(s driver.Stream, body func() error) (driver.GraphExec, error) {
	if err := s.BeginCapture(driver.CaptureModeThreadLocal); err != nil {
		return 0, err
	}
	bodyErr := body()
	graph, err := s.EndCapture()
	if err != nil {
		return 0, errors.Join(bodyErr, err)
	}
	defer graph.Destroy()
	if bodyErr != nil {
		return 0, bodyErr
	}
	return graph.Instantiate()
}
