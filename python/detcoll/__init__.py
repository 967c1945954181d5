"""detcoll for Python: deterministic reductions for torch.distributed, vLLM and SGLang.

detcoll's libdetcoll-nccl is a shared library that exports NCCL's C ABI
and sends every all-reduce, reduce-scatter and reduce of bfloat16,
float16, float32 and float64 with SUM, AVG, MAX, MIN or PREMUL_SUM (and
of the integer types with SUM, AVG, MAX or MIN) through detcoll's fixed
reduction tree, so that the results are bitwise identical across runs,
message sizes and offsets; everything else (PRODUCT, gathers, sends) goes
to the real NCCL. This package finds the
library and puts it under torch.distributed, with no change to the
program:

    import detcoll.torch
    detcoll.torch.enable()      # before "import torch"
    import torch, torch.distributed as dist
    ...
    detcoll.torch.verify()      # after init_process_group: checks the bits

or, for any program (and for vLLM or SGLang, whose NCCL library variable
may name the library instead):

    LD_PRELOAD=$(python -m detcoll) torchrun --nproc-per-node 8 train.py

Pure Python, no build step; the library itself is built from the Go
module: go build -buildmode=c-shared -o libdetcoll-nccl.so ./cmd/libdetcoll-nccl
"""

from detcoll._lib import LIBRARY_NAME, library_path, preload_line

__all__ = ["LIBRARY_NAME", "library_path", "preload_line"]
