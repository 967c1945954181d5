"""detcoll's reduction tree, written independently of the Go code.

T over ranks [lo, hi): one rank is its value; otherwise split at p, the
largest power of two strictly below hi - lo, and add the halves, the lower
ranks on the left. Every node rounds once in the element type; every NaN
result is one canonical NaN. (detcoll's contract, section 3.)
"""


def split(n):
    """The largest power of two strictly below n (n >= 2)."""
    p = 1
    while p * 2 < n:
        p *= 2
    return p


def tree(values, add, lo=0, hi=None):
    """Evaluates T over values[lo:hi] with add(left, right)."""
    hi = len(values) if hi is None else hi
    if hi - lo == 1:
        return values[lo]
    p = split(hi - lo)
    return add(tree(values, add, lo, lo + p), tree(values, add, lo + p, hi))


def shape(world):
    """T's shape over world ranks, as text: shape(3) == '((r0+r1)+r2)'."""
    return tree([f"r{r}" for r in range(world)], lambda a, b: f"({a}+{b})")


# The canonical NaN's bits per element type, as detcoll writes them.
CANONICAL_NAN = {"bfloat16": 0x7FFF, "float16": 0x7FFF, "float32": 0x7FFFFFFF, "float64": 0x7FFFFFFFFFFFFFFF}
