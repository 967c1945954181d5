package driver

import "testing"

func TestTried(t *testing.T) {
	missing := func(n string) string {
		return "dlopen " + n + ": " + n + ": cannot open shared object file: No such file or directory"
	}
	for _, tc := range []struct {
		names, errs []string
		want        string
	}{
		{[]string{"a.so", "b.so"}, []string{missing("a.so"), missing("b.so")}, "tried a.so, b.so: none is on the loader's path"},
		{[]string{"a.so", "b.so"}, []string{missing("a.so"), "dlopen b.so: b.so: wrong ELF class: ELFCLASS32"},
			"tried a.so, b.so: dlopen b.so: b.so: wrong ELF class: ELFCLASS32"},
	} {
		if got := Tried(tc.names, tc.errs); got != tc.want {
			t.Errorf("Tried(%q) = %q; want %q", tc.names, got, tc.want)
		}
	}
}
