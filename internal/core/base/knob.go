package base

import (
	"fmt"
	"strconv"

	"github.com/detcoll/detcoll/internal/core/settings"
)

// TuningKnob returns the byte count in environment variable name, or def
// when it is unset. The backends' knobs (thresholds, chunk sizes) are for
// measuring, not API. A value that is not an integer >= min, or not a
// multiple of mult, is an error that names the variable.
func TuningKnob(name string, def, min, mult int) (int, error) {
	v := settings.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n%mult != 0 {
		want := fmt.Sprintf("a byte count >= %d", min)
		if mult > 1 {
			want += fmt.Sprintf(", a multiple of %d", mult)
		}
		return 0, fmt.Errorf("%s=%q: want %s", name, v, want)
	}
	return n, nil
}
