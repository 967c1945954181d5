"""DETCOLL_NCCL_MODE=strict under torch.distributed: a sum goes through
detcoll; a max, which detcoll does not make deterministic, fails with the
library's reason instead of going to the real NCCL. Exits 0 when both hold.

    LD_PRELOAD=... DETCOLL_NCCL_MODE=strict torchrun --nproc-per-node W tests/gpu_strict.py
"""

import sys

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
x = torch.ones(8, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
assert x.tolist() == [dist.get_world_size()] * 8, x.tolist()
print("sum:", x.tolist())
try:
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    torch.cuda.synchronize()
except Exception as e:  # noqa: BLE001 - the failure is the point
    text = str(e)
    print("max refused:", type(e).__name__, text[:300].replace("\n", " "))
    ok = "not one detcoll makes deterministic" in text or "invalid usage" in text.lower()
    sys.exit(0 if ok else 1)
print("max was not refused")
sys.exit(1)
