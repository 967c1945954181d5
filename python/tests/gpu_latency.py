"""all_reduce latency through torch.distributed, for the side-by-side run:
the same script with the real NCCL and with libdetcoll-nccl preloaded.

    torchrun --nproc-per-node W tests/gpu_latency.py OUT.json LABEL

Per size: median of 200 calls after 20, each timed by CUDA events around a
synchronised call (as a training step sees it), and the median per call of
100 calls queued back to back (pipelined), bf16; rank 0 writes the JSON.
"""

import json
import os
import statistics
import sys

import torch
import torch.distributed as dist


def main():
    out, label = sys.argv[1], sys.argv[2]
    dist.init_process_group("nccl")
    # Ranks may share a GPU (virtual hosts on one GPU).
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    rows = []
    for size in (1 << 10, 1 << 16, 1 << 18, 1 << 20, 1 << 24, 1 << 26):
        x = torch.randn(size // 2, dtype=torch.bfloat16, device="cuda")
        for _ in range(20):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        sync = []
        for _ in range(200):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            dist.all_reduce(x)
            b.record()
            b.synchronize()
            sync.append(a.elapsed_time(b) * 1000)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(100):
            dist.all_reduce(x)
        b.record()
        b.synchronize()
        rows.append({"bytes": size, "sync_median_us": statistics.median(sync), "pipelined_us": a.elapsed_time(b) * 10})
    if dist.get_rank() == 0:
        with open(out, "w") as f:
            json.dump({"label": label, "world": dist.get_world_size(), "device": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "preload": os.environ.get("LD_PRELOAD", ""), "rows": rows}, f, indent=1)
        for r in rows:
            print(f"{label}: {r['bytes']:>9} B  sync {r['sync_median_us']:8.2f} us  pipelined {r['pipelined_us']:8.2f} us")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
