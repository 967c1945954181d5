"""python -m detcoll: print the library's path, for LD_PRELOAD."""

import sys

from detcoll._lib import library_path

try:
    print(library_path())
except FileNotFoundError as e:
    print(f"detcoll: {e}", file=sys.stderr)
    sys.exit(1)
