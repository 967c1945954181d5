//go:build !unix

package launch

import (
	"context"
	"errors"
)

// Run needs process groups and POSIX signals; here it only validates cfg
// and fails.
func Run(ctx context.Context, cfg Config) error {
	if _, err := cfg.withDefaults().validate(); err != nil {
		return err
	}
	return errors.New("launch: Run needs a Unix system")
}
