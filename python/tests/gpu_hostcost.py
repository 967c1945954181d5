"""The host's cost of an eager dist.all_reduce under torch (the GPU
machine's measurement), with libdetcoll-nccl preloaded or not:

    [LD_PRELOAD=/path/libdetcoll-nccl.so] torchrun --nproc-per-node W tests/gpu_hostcost.py OUT.json LABEL

1 KiB of bfloat16 per call; 3000 calls queued without synchronising, timed
on the host from the first call to the return of the last (the GPU runs
them meanwhile); eight repeats after a warm-up: the median and the best
(the host is shared and noisy: the best is the cost without the noise).
Rank 0 writes the JSON and prints one line.
"""

import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    out, label = sys.argv[1], sys.argv[2]
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local % torch.cuda.device_count())
    dist.init_process_group("nccl")
    x = torch.randn(512, dtype=torch.bfloat16, device="cuda")
    calls = 3000
    for _ in range(200):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    runs = []
    for _ in range(8):
        dist.barrier()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(x)
        runs.append((time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    if dist.get_rank() == 0:
        row = {"label": label, "world": dist.get_world_size(), "bytes": 1024, "calls": calls,
               "host_us_per_call": runs, "median_us": statistics.median(runs), "best_us": min(runs), "torch": torch.__version__,
               "preload": os.environ.get("LD_PRELOAD", "")}
        with open(out, "w") as f:
            json.dump(row, f, indent=1)
        print(f"{label}: W={row['world']} host {row['median_us']:.2f} us per call, best {row['best_us']:.2f} (runs {[round(r, 2) for r in runs]})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
