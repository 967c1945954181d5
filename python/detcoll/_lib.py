"""Where libdetcoll-nccl is, and what it needs."""

import ctypes
import importlib.util
import os
import sys

LIBRARY_NAME = "libdetcoll-nccl.so"

# DETCOLL_NCCL_LIB names the library; else it is looked for beside this
# package (a copy put there) and in the directories of LD_LIBRARY_PATH.
ENV_LIB = "DETCOLL_NCCL_LIB"

BUILD_HINT = (
    "build it from the detcoll module with "
    "'go build -buildmode=c-shared -o libdetcoll-nccl.so ./cmd/libdetcoll-nccl' "
    f"and set {ENV_LIB} to its path"
)


def candidates(environ=None):
    """The paths library_path tries, in order."""
    environ = os.environ if environ is None else environ
    paths = []
    if environ.get(ENV_LIB):
        paths.append(environ[ENV_LIB])
    here = os.path.dirname(os.path.abspath(__file__))
    paths.append(os.path.join(here, LIBRARY_NAME))
    for d in environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d:
            paths.append(os.path.join(d, LIBRARY_NAME))
    return paths


def library_path(environ=None):
    """The absolute path of the library; FileNotFoundError if it is nowhere."""
    environ = os.environ if environ is None else environ
    tried = candidates(environ)
    if environ.get(ENV_LIB) and not os.path.isfile(tried[0]):
        raise FileNotFoundError(f"{ENV_LIB}={tried[0]} is not a file")
    for p in tried:
        if os.path.isfile(p):
            return os.path.abspath(p)
    raise FileNotFoundError(f"no {LIBRARY_NAME} in {tried}: {BUILD_HINT}")


def preload_line(environ=None):
    """The environment setting that puts the library under any program."""
    return f"LD_PRELOAD={library_path(environ)}"


def loaded(maps="/proc/self/maps"):
    """Whether the library is mapped into this process already."""
    try:
        with open(maps) as f:
            return any(line.rstrip().endswith("/" + LIBRARY_NAME) for line in f)
    except OSError:
        return False


def problems(find_spec=importlib.util.find_spec, load=ctypes.CDLL):
    """What this machine lacks for the library to serve anything, as
    sentences (none: nothing is missing). The library itself loads
    anywhere; without a CUDA driver every reduction goes to the real NCCL
    (or, under DETCOLL_NCCL_MODE=strict, fails), and without torch there is
    no torch.distributed to serve. torch is looked for, not imported:
    enable() must run before it is."""
    out = []
    try:
        load("libcuda.so.1")
    except OSError:
        out.append("no CUDA driver (libcuda.so.1 does not load): the library will hand every reduction to the "
                   "real NCCL, which needs a GPU too")
    if "torch" not in sys.modules and find_spec("torch") is None:
        out.append("torch is not installed: there is no torch.distributed for the library to serve")
    return out
