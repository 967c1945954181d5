"""python -m detcoll: print the library's path, for LD_PRELOAD; --check says
what this machine lacks for it."""

import argparse
import sys

from detcoll import _lib


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m detcoll",
        description="Prints the path of libdetcoll-nccl (DETCOLL_NCCL_LIB, beside this package, or on "
        "LD_LIBRARY_PATH), for LD_PRELOAD=$(python -m detcoll) or vLLM's and SGLang's *_NCCL_SO_PATH.",
    )
    parser.add_argument("--check", action="store_true",
                        help="also say what this machine lacks for the library to serve (CUDA driver, torch)")
    args = parser.parse_args(argv)
    try:
        print(_lib.library_path())
    except FileNotFoundError as e:
        print(f"detcoll: {e}", file=sys.stderr)
        return 1
    if args.check:
        problems = _lib.problems()
        for p in problems:
            print(f"detcoll: {p}", file=sys.stderr)
        if problems:
            return 1
        print("detcoll: the CUDA driver and torch are here", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
