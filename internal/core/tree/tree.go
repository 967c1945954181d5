package tree

import (
	"math/bits"
	"strconv"
	"strings"
)

// Split returns where T splits the ranks [lo, hi): lo+p, for p the largest
// power of two strictly less than hi-lo. It panics if hi-lo < 2, where there
// is nothing to split.
func Split(lo, hi int) int {
	n := hi - lo
	if n < 2 {
		panic("tree: Split of fewer than two ranks")
	}
	return lo + 1<<(bits.Len(uint(n-1))-1)
}

// Eval returns T over leaves, combining with add (left operand the lower
// leaves). One leaf is returned as is. It panics on no leaves. It is the
// reference evaluation: simple, recursive, one add call per node.
func Eval[T any](leaves []T, add func(a, b T) T) T {
	switch len(leaves) {
	case 0:
		panic("tree: Eval of no leaves")
	case 1:
		return leaves[0]
	}
	p := Split(0, len(leaves))
	return add(Eval(leaves[:p], add), Eval(leaves[p:], add))
}

// String returns T for w ranks as an expression over r0..r(w-1), such as
// "((r0+r1)+(r2+r3))+(r4+r5)" for w=6, without outermost parentheses; w=1
// gives "r0". It panics if w < 1.
func String(w int) string {
	if w < 1 {
		panic("tree: String of fewer than one rank")
	}
	var b strings.Builder
	writeExpr(&b, 0, w, false)
	return b.String()
}

func writeExpr(b *strings.Builder, lo, hi int, paren bool) {
	if hi-lo == 1 {
		b.WriteByte('r')
		b.WriteString(strconv.Itoa(lo))
		return
	}
	if paren {
		b.WriteByte('(')
	}
	mid := Split(lo, hi)
	writeExpr(b, lo, mid, true)
	b.WriteByte('+')
	writeExpr(b, mid, hi, true)
	if paren {
		b.WriteByte(')')
	}
}
