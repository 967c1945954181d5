"""detcoll under torch.distributed: enable() and verify()."""

import ctypes
import os
import sys
import warnings

from detcoll import _lib
from detcoll.tree import CANONICAL_NAN, INF, INT_TYPES, WIDTH, int_reduce, tree, wrap


class NotEnabledError(RuntimeError):
    """The library cannot be put under torch any more (or at all) in this process."""


# Set in the environment of a program that enable() restarted.
_REEXEC = "DETCOLL_ENABLE_REEXEC"


def enable(environ=None):
    """Puts libdetcoll-nccl under torch.distributed's NCCL backend.

    Call it first, before torch is imported: it loads the library with
    RTLD_GLOBAL, so that its NCCL functions come before the real NCCL's
    when torch's libraries are bound, as LD_PRELOAD would. Where the
    process cannot load it any more (no static TLS left: "cannot allocate
    memory in static TLS block"), it starts the program again, the same
    command line under LD_PRELOAD, in the same process (exec): whatever
    the program did before enable() is done again. Under LD_PRELOAD it
    has nothing to do. It returns the library's path. Where this machine
    lacks what the library needs to serve anything (a CUDA driver, torch),
    it says so with a RuntimeWarning, at once, rather than let the first
    NCCL call fail later.
    """
    environ = os.environ if environ is None else environ
    path = _lib.library_path(environ)
    for p in _lib.problems():
        warnings.warn(f"detcoll: {p}", RuntimeWarning, stacklevel=2)
    if _lib.loaded():
        return path
    if "torch" in sys.modules:
        raise NotEnabledError(
            "torch is imported already, so its NCCL functions are bound: call detcoll.torch.enable() "
            f"before importing torch, or start the program with {_lib.preload_line(environ)}"
        )
    try:
        ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        return path
    except OSError as e:
        if "static TLS" not in str(e) or environ.get(_REEXEC) or not _restartable():
            raise NotEnabledError(f"{e}: start the program with {_lib.preload_line(environ)}") from e
    env = dict(environ)
    env["LD_PRELOAD"] = ":".join(p for p in (path, environ.get("LD_PRELOAD", "")) if p)
    env[_REEXEC] = path
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, env)


def _restartable():
    """Whether the program can be started again from its command line (a
    script or a module, not an interactive session)."""
    return bool(getattr(sys, "orig_argv", None)) and not sys.flags.interactive and len(sys.orig_argv) > 1


def enabled():
    """Whether the library is in this process."""
    return _lib.loaded()


def _int_view(t):
    import torch

    return t.view({torch.bfloat16: torch.int16, torch.float16: torch.int16,
                   torch.float32: torch.int32, torch.float64: torch.int64}[t.dtype])


# The operators reference() takes, by torch.distributed.ReduceOp's names.
OPERATORS = ("sum", "avg", "max", "min", "premul_sum")


def reference(inputs, op="sum", factors=None):
    """detcoll's result of reducing the ranks' inputs (CPU or GPU tensors of
    one dtype, by rank) with op, element by element, computed without
    detcoll. op is one of OPERATORS (a torch.distributed.ReduceOp's name,
    any case; "premulsum" too); factors[r] is rank r's PREMUL_SUM factor as
    given to torch.distributed._make_nccl_premul_sum, a Python float (an
    ncclScalarHostImmediate factor) or a one-element tensor (an
    ncclScalarDevice one), taken as NCCL reads what PyTorch hands it
    (_factor: for bfloat16 that is not the factor). The float types:

    - sum: T with the dtype's add at every node (torch's CPU adds compute
      bfloat16 and float16 in float32 and round once, to nearest even),
      NaN made canonical;
    - avg: the sum, then one division by W rounded once: for bfloat16 and
      float16 (s.float() / W).to(dtype), for float32 through float64;
    - premul_sum: each rank's input times its factor, rounded once to the
      dtype (the product exact in float32 for bfloat16 and float16, in
      float64 for float32), then the sum;
    - max, min: T with tree.extremum at every node (-0 below +0, any NaN
      the canonical NaN).

    The integer types (int8, uint8, int32, uint32, int64, uint64): sum
    (wrapping), avg (the wrapped sum over W, truncated toward zero), max,
    min: tree.int_reduce per element, in Python (slow for large tensors).
    """
    import torch

    name = op.lower()
    if name == "premulsum":
        name = "premul_sum"
    if name not in OPERATORS:
        raise ValueError(f"no operator {op!r}: one of {', '.join(OPERATORS)}")
    xs = [x.cpu() for x in inputs]
    dt = xs[0].dtype
    wide = _wide().get(dt)
    if wide is None:
        return _int_reference(xs, name)
    if name == "max" or name == "min":
        return _extremum_reference(xs, name == "max")
    if name == "premul_sum":
        if factors is None or len(factors) != len(xs):
            raise ValueError(f"premul_sum needs one factor per rank ({len(xs)}), got {factors!r}")
        xs = [(x.to(wide) * _factor(f, dt).to(wide)).to(dt) for x, f in zip(xs, factors)]
    out = _sum_reference(xs)
    if name == "avg":
        out = _canonical((out.to(wide) / len(xs)).to(dt))
    return out


# The type a float type's one rounding goes through, by float type (filled
# at first use: torch is imported late): the product of two values of the
# dtype is exact there, and a quotient rounded there and then to the
# dtype is the correctly rounded one.
_WIDE = {}


def _wide():
    import torch

    if not _WIDE:
        _WIDE.update({torch.bfloat16: torch.float32, torch.float16: torch.float32,
                      torch.float32: torch.float64, torch.float64: torch.float64})
    return _WIDE


def _factor(f, dt):
    """A PREMUL_SUM factor as the one value of dt that NCCL, and detcoll
    after it, reads from what PyTorch hands over: T(f) of the dtype's C
    type T (float16: through float32). For bfloat16, PyTorch (2.11's
    unpackPreMulSum<float, ncclBfloat16>) hands a float32, a host one or a
    float32 tensor's address, and NCCL reads the element's first two bytes,
    the float's low half, as the bfloat16 factor: a factor of 0.5 reads as
    0, 0.7 as 2^-22 or so (measured under NCCL alone, the same bits as
    through the library). A bfloat16 tensor is taken as it is."""
    import torch

    if isinstance(f, torch.Tensor):
        f = f.detach().cpu().reshape(1)
    else:
        f = torch.tensor([float(f)], dtype=torch.float32 if dt in (torch.bfloat16, torch.float16) else torch.float64)
    if dt == torch.bfloat16 and f.dtype == torch.float32:
        return f.view(torch.int16)[0:1].view(torch.bfloat16)[0]  # little endian: the low half
    return f.to(dt)[0]


def _sum_reference(xs):
    """T over xs with the dtype's add, NaN canonical: the sum."""
    import torch

    out = tree(xs, lambda a, b: a + b)
    if len(xs) == 1:
        out = out + torch.tensor(-0.0, dtype=out.dtype)  # T over one leaf: x + (-0)
    return _canonical(out)


def _canonical(t):
    """t with every NaN's bits made the canonical NaN's."""
    import torch

    bits = _int_view(t.clone())
    bits[torch.isnan(t)] = CANONICAL_NAN[str(t.dtype).removeprefix("torch.")]
    return bits.view(t.dtype)


def _extremum_reference(xs, largest):
    """T over xs with tree.extremum at every node, on whole tensors: a
    node keeps the operand whose order key is larger (smaller), the key an
    integer of the element's width that orders the values, -0 below +0 (a
    negative value's bits but the sign flipped), and any NaN operand gives
    the canonical NaN."""
    import torch

    dt = xs[0].dtype
    name = str(dt).removeprefix("torch.")
    magnitude = (1 << (WIDTH[name] - 1)) - 1

    def node(a, b):
        ka = torch.where(a < 0, a ^ magnitude, a)
        kb = torch.where(b < 0, b ^ magnitude, b)
        out = torch.where(ka > kb if largest else ka < kb, a, b)
        out[((a & magnitude) > INF[name]) | ((b & magnitude) > INF[name])] = CANONICAL_NAN[name]
        return out

    out = tree([_int_view(x.contiguous()) for x in xs], node)
    if len(xs) == 1:
        out = node(out, out)  # a NaN made canonical
    return out.view(dt)


def _int_reference(xs, name):
    """tree.int_reduce element by element, on Python ints."""
    import torch

    dtype = str(xs[0].dtype).removeprefix("torch.")
    if dtype not in INT_TYPES or name == "premul_sum":
        raise ValueError(f"detcoll has no {name} of {dtype}")
    width, _ = INT_TYPES[dtype]
    # Read and written through the signed view of the width (torch's
    # uint32 and uint64 take few operations): the same bits.
    signed = {8: torch.int8, 32: torch.int32, 64: torch.int64}[width]
    cols = zip(*[[wrap(v, dtype) for v in x.contiguous().view(signed).tolist()] for x in xs])
    out = [wrap(int_reduce(list(col), name, dtype), "int" + str(width)) for col in cols]
    if dtype == "uint8":
        return torch.tensor(out, dtype=torch.int8).view(torch.uint8)
    return torch.tensor(out, dtype=signed).view(xs[0].dtype)


def verify(sizes=(1, 7, 1000, 65536, 1 << 20), dtypes=None, group=None, seed=1, nans=True, ops=("sum",)):
    """Checks on this machine that dist.all_reduce with each of ops (SUM by
    default; "avg", "max" and "min" too) is detcoll's: every rank's result
    equals the reference (reference()) bit for bit over all ranks' inputs,
    the same rows reduced inside a larger tensor at an offset give the same
    bits, and a repeated call too. Call it on every rank after
    init_process_group("nccl"). It returns a list of rows (dtype, size,
    what held) and raises AssertionError at the first difference, naming
    the element."""
    import torch
    import torch.distributed as dist

    dtypes = dtypes or (torch.bfloat16, torch.float16, torch.float32, torch.float64)
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    dev = torch.device("cuda", torch.cuda.current_device())
    rows = []
    for op in ops:
        red = getattr(dist.ReduceOp, op.upper())
        for dt in dtypes:
            for n in sizes:
                g = torch.Generator().manual_seed(seed * 1000003 + n * 31 + rank)
                x = (torch.randn(n, generator=g, dtype=torch.float64) * 4).to(dt)
                if nans and n > 3:
                    x[3] = float("nan")
                everyone = [torch.empty(n, dtype=dt, device=dev) for _ in range(world)]
                dist.all_gather(everyone, x.to(dev), group=group)  # bytes, exact
                want = _int_view(reference(everyone, op=op))
                what = f"{op} {dt} n={n}"
                got = x.to(dev)
                dist.all_reduce(got, op=red, group=group)
                _same(_int_view(got.cpu()), want, f"{what}: all_reduce against the reference tree")
                # The same rows at an offset inside a larger tensor, and again.
                big = torch.randn(n + 37, generator=g, dtype=torch.float64).to(dt).to(dev)
                big[5:5 + n] = x.to(dev)
                dist.all_reduce(big, op=red, group=group)
                _same(_int_view(big[5:5 + n].cpu()), want, f"{what}: inside a tensor of {n + 37} at offset 5")
                again = x.to(dev)
                dist.all_reduce(again, op=red, group=group)
                _same(_int_view(again.cpu()), want, f"{what}: a repeated call")
                rows.append((str(dt) if op == "sum" else f"{op} {dt}", n, "reference, offset and repeat bit-equal"))
    return rows


def _same(got, want, what):
    import torch

    if not torch.equal(got, want):
        i = int((got != want).nonzero()[0])
        raise AssertionError(f"{what}: element {i}: got bits {int(got[i]) & 0xFFFFFFFFFFFFFFFF:#x}, "
                             f"want {int(want[i]) & 0xFFFFFFFFFFFFFFFF:#x}")
