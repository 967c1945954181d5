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


# The operators besides the sum (detcoll's contract, "Reductions"), on the
# bits of one element, for checks that read results as integers.

WIDTH = {"bfloat16": 16, "float16": 16, "float32": 32, "float64": 64}
# The bits of +Inf: a magnitude above it is a NaN.
INF = {"bfloat16": 0x7F80, "float16": 0x7C00, "float32": 0x7F800000, "float64": 0x7FF0000000000000}


def is_nan(bits, dtype):
    """Whether bits, an element of the float type dtype, is a NaN."""
    magnitude = bits & ((1 << (WIDTH[dtype] - 1)) - 1)
    return magnitude > INF[dtype]


def order_key(bits, dtype):
    """An integer that orders the elements of dtype that are not NaNs as
    their values, -0 below +0: a negative value's bits flipped, a positive
    one's sign bit set."""
    width = WIDTH[dtype]
    sign = 1 << (width - 1)
    if bits & sign:
        return ~bits & ((1 << width) - 1)
    return bits | sign


def extremum(a, b, dtype, largest):
    """Max (largest) or Min of two elements' bits, as detcoll's nodes take
    it: the canonical NaN if either is a NaN, else the larger (smaller) in
    order_key's order. Order-free: T's shape cannot show in the result.

    Avg and PreMulSum need rounding, which torch does: for bfloat16 and
    float16, (s.float() / W).to(dtype) and (x.float() * f.float()).to(dtype)
    round once from a float32 that holds the exact product, or the
    correctly rounded quotient, as detcoll does; float32 goes through
    float64 the same way."""
    if is_nan(a, dtype) or is_nan(b, dtype):
        return CANONICAL_NAN[dtype]
    ka, kb = order_key(a, dtype), order_key(b, dtype)
    if ka == kb:
        return a
    return a if (ka > kb) == largest else b


# The integer types (detcoll's contract, "Reductions"): exact in any order,
# so T's shape cannot show; the reference uses T all the same.

INT_TYPES = {"int8": (8, True), "uint8": (8, False), "int32": (32, True), "uint32": (32, False),
             "int64": (64, True), "uint64": (64, False)}


def wrap(v, dtype):
    """v as a value of the integer type dtype: modulo 2^n, into its range."""
    width, signed = INT_TYPES[dtype]
    v &= (1 << width) - 1
    if signed and v >> (width - 1):
        v -= 1 << width
    return v


def int_node(op, dtype):
    """The node of op ("sum", "max" or "min") on values of the integer type
    dtype: a sum wraps modulo 2^n."""
    if op == "sum":
        return lambda a, b: wrap(a + b, dtype)
    if op in ("max", "min"):
        return max if op == "max" else min
    raise ValueError(f"no integer node {op!r} (sum, max, min)")


def int_reduce(values, op, dtype):
    """One element of an integer reduction over the ranks' values (Python
    ints of dtype's range): "sum" (wrapping), "max", "min", or "avg", the
    wrapped sum divided by the number of ranks, truncated toward zero (as
    NCCL's)."""
    if op == "avg":
        s = tree(values, int_node("sum", dtype))
        q = abs(s) // len(values)
        return q if s >= 0 else -q
    return tree(values, int_node(op, dtype))
