"""detcoll under torch.distributed: enable() and verify()."""

import ctypes
import os
import sys
import warnings

from detcoll import _lib
from detcoll.tree import CANONICAL_NAN, tree


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


def reference(inputs):
    """T over the ranks' inputs (CPU tensors of one float dtype), element by
    element, each node rounded in the dtype (torch's CPU adds compute
    bfloat16 and float16 in float32 and round once, to nearest even), NaN
    made canonical. It is detcoll's result, computed without detcoll."""
    import torch

    out = tree([x.cpu() for x in inputs], lambda a, b: a + b)
    if len(inputs) == 1:
        out = out + torch.tensor(-0.0, dtype=out.dtype)  # T over one leaf: x + (-0)
    bits = _int_view(out.clone())
    nan = torch.isnan(out)
    bits[nan] = CANONICAL_NAN[str(out.dtype).removeprefix("torch.")]
    return bits.view(out.dtype)


def verify(sizes=(1, 7, 1000, 65536, 1 << 20), dtypes=None, group=None, seed=1, nans=True):
    """Checks on this machine that dist.all_reduce(SUM) is detcoll's: every
    rank's result equals the reference tree (reference()) bit for bit over
    all ranks' inputs, the same rows summed inside a larger tensor at an
    offset give the same bits, and a repeated call too. Call it on every
    rank after init_process_group("nccl"). It returns a list of rows
    (dtype, size, what held) and raises AssertionError at the first
    difference, naming the element."""
    import torch
    import torch.distributed as dist

    dtypes = dtypes or (torch.bfloat16, torch.float16, torch.float32, torch.float64)
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    dev = torch.device("cuda", torch.cuda.current_device())
    rows = []
    for dt in dtypes:
        for n in sizes:
            g = torch.Generator().manual_seed(seed * 1000003 + n * 31 + rank)
            x = (torch.randn(n, generator=g, dtype=torch.float64) * 4).to(dt)
            if nans and n > 3:
                x[3] = float("nan")
            everyone = [torch.empty(n, dtype=dt, device=dev) for _ in range(world)]
            dist.all_gather(everyone, x.to(dev), group=group)  # bytes, exact
            want = _int_view(reference(everyone))
            got = x.to(dev)
            dist.all_reduce(got, group=group)
            _same(_int_view(got.cpu()), want, f"{dt} n={n}: all_reduce against the reference tree")
            # The same rows at an offset inside a larger tensor, and again.
            big = torch.randn(n + 37, generator=g, dtype=torch.float64).to(dt).to(dev)
            big[5:5 + n] = x.to(dev)
            dist.all_reduce(big, group=group)
            _same(_int_view(big[5:5 + n].cpu()), want, f"{dt} n={n}: inside a tensor of {n + 37} at offset 5")
            again = x.to(dev)
            dist.all_reduce(again, group=group)
            _same(_int_view(again.cpu()), want, f"{dt} n={n}: a repeated call")
            rows.append((str(dt), n, "reference, offset and repeat bit-equal"))
    return rows


def _same(got, want, what):
    import torch

    if not torch.equal(got, want):
        i = int((got != want).nonzero()[0])
        raise AssertionError(f"{what}: element {i}: got bits {int(got[i]) & 0xFFFFFFFFFFFFFFFF:#x}, "
                             f"want {int(want[i]) & 0xFFFFFFFFFFFFFFFF:#x}")
