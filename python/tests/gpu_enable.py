"""gpu_torch.py with the library put in place by detcoll.torch.enable()
before torch is imported, instead of LD_PRELOAD (set DETCOLL_NCCL_LIB)."""

import os
import runpy
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import detcoll.torch  # noqa: E402

print("enabled:", detcoll.torch.enable())
runpy.run_path(os.path.join(os.path.dirname(__file__), "gpu_torch.py"), run_name="__main__")
