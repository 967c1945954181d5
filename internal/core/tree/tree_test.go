package tree

import (
	"strconv"
	"testing"
)

// TestSplitString checks T's shape against the contract's examples and the
// definition for W = 1..9 and 16.
func TestSplitString(t *testing.T) {
	cases := []struct {
		w     int
		split int // Split(0, w); 0 where w < 2
		expr  string
	}{
		{1, 0, "r0"},
		{2, 1, "r0+r1"},
		{3, 2, "(r0+r1)+r2"},
		{4, 2, "(r0+r1)+(r2+r3)"},
		{5, 4, "((r0+r1)+(r2+r3))+r4"},
		{6, 4, "((r0+r1)+(r2+r3))+(r4+r5)"},
		{7, 4, "((r0+r1)+(r2+r3))+((r4+r5)+r6)"},
		{8, 4, "((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7))"},
		{9, 8, "(((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)))+r8"},
		{16, 8, "(((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)))+(((r8+r9)+(r10+r11))+((r12+r13)+(r14+r15)))"},
	}
	for _, c := range cases {
		if got := String(c.w); got != c.expr {
			t.Errorf("String(%d) = %q; want %q", c.w, got, c.expr)
		}
		if c.w >= 2 {
			if got := Split(0, c.w); got != c.split {
				t.Errorf("Split(0, %d) = %d; want %d", c.w, got, c.split)
			}
			if got := Split(10, 10+c.w); got != 10+c.split {
				t.Errorf("Split(10, %d) = %d; want %d", 10+c.w, got, 10+c.split)
			}
		}
		// Eval over strings builds the same expression.
		leaves := make([]string, c.w)
		for i := range leaves {
			leaves[i] = "r" + strconv.Itoa(i)
		}
		got := Eval(leaves, func(a, b string) string { return "(" + a + "+" + b + ")" })
		if c.w > 1 {
			got = got[1 : len(got)-1]
		}
		if got != c.expr {
			t.Errorf("Eval(%d leaves) = %q; want %q", c.w, got, c.expr)
		}
	}
}

// TestPanics checks the internal-misuse panics.
func TestPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Split(3, 4)": func() { Split(3, 4) },
		"Split(3, 3)": func() { Split(3, 3) },
		"Eval(none)":  func() { Eval(nil, func(a, b int) int { return a + b }) },
		"String(0)":   func() { String(0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
