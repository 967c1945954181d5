"""Where libdetcoll-nccl is."""

import os

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
