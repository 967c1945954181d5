package driver

import "strings"

// Tried words what a search for a shared library found: the names tried,
// and the loader's errors only where they say more than "not there", so
// that a machine without the library gets one short line, and one with a
// broken copy (a wrong architecture, a missing dependency) gets the
// reason. errs holds dlerror's text per name, in order.
func Tried(names, errs []string) string {
	var other []string
	for _, e := range errs {
		if !strings.Contains(e, "No such file or directory") {
			other = append(other, e)
		}
	}
	s := "tried " + strings.Join(names, ", ")
	if len(other) == 0 {
		return s + ": none is on the loader's path"
	}
	return s + ": " + strings.Join(other, "; ")
}
