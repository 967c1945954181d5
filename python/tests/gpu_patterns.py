"""The ways PyTorch programs really call NCCL, under libdetcoll-nccl (the GPU
machine's check). An unmodified torch.distributed program, run by torchrun
with the library preloaded (or not: then it checks that the program runs
under NCCL alone, without the bit checks that only detcoll passes):

    LD_PRELOAD=/path/libdetcoll-nccl.so torchrun --nproc-per-node W tests/gpu_patterns.py OUT.json

Ranks may share one GPU (two NCCL hosts on one GPU: NCCL_HOSTID per rank).
Checks, each against detcoll's reference tree: asynchronous collectives
(the process group's stream) interleaved with synchronous ones (the
current stream) without a wait; all_reduce on two user streams; reduce to
every root; an FSDP-size reduce_scatter_tensor (far over the library's
capacity); at W=1 a reduce_scatter_tensor of NaNs; eight process groups,
one all_reduce each, and the GPU memory they took. Writes OUT.json.RANK.
"""

import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from detcoll import torch as dtorch  # noqa: E402

results = []


def check(name):
    def wrap(f):
        t0 = time.time()
        try:
            results.append({"check": name, "ok": True, "detail": f(), "s": round(time.time() - t0, 3)})
        except Exception as e:  # noqa: BLE001 - every failure is reported
            results.append({"check": name, "ok": False, "error": f"{type(e).__name__}: {e}",
                            "trace": traceback.format_exc(), "s": round(time.time() - t0, 3)})
        return f
    return wrap


def main():
    out = sys.argv[1]
    local = int(os.environ.get("LOCAL_RANK", 0))
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    t0 = time.time()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    detcoll = dtorch.enabled()
    used0 = device_used()
    info = {"rank": rank, "world": world, "preloaded": detcoll, "torch": torch.__version__,
            "nccl": ".".join(map(str, torch.cuda.nccl.version())), "device": torch.cuda.get_device_name(dev),
            "gpus": torch.cuda.device_count()}

    def rand(n, dt, salt):
        g = torch.Generator().manual_seed(4242 + 7919 * salt + 104729 * rank)
        return (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dt).to(dev)

    def gather(x):
        everyone = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(everyone, x)  # the real NCCL's: bytes, exact
        return everyone

    def reference(x):
        return dtorch._int_view(dtorch.reference(gather(x)))

    def same(got, want, what):
        got = dtorch._int_view(got.cpu())
        if not detcoll:
            return  # NCCL's bits are not the tree's: the pattern only has to complete
        if not torch.equal(got, want):
            i = int((got != want).nonzero()[0])
            raise AssertionError(f"{what}: element {i}: got {int(got[i]):#x}, want {int(want[i]):#x}")

    @check("first all_reduce (with the library: its setup, and a cold compile on a fresh cache)")
    def _():
        x = rand(1024, torch.bfloat16, 0)
        want = reference(x)
        t = time.time()
        dist.all_reduce(x)
        torch.cuda.synchronize()
        info["first_all_reduce_s"] = round(time.time() - t, 3)
        info["init_to_first_s"] = round(time.time() - t0, 3)
        same(x, want, "first")
        return f"{info['first_all_reduce_s']} s"

    @check("async all_reduce (process group's stream) interleaved with sync ones (current stream), no wait")
    def _():
        xs = [rand(4096 + 17 * i, torch.float32, 100 + i) for i in range(16)]
        wants = [reference(x) for x in xs]
        torch.cuda.synchronize()
        works = []
        for i, x in enumerate(xs):
            if i % 2 == 0:
                if rank == 0:
                    torch.cuda._sleep(1_000_000)  # holds the current stream back on one rank
                works.append(dist.all_reduce(x, async_op=True))
            else:
                dist.all_reduce(x)
        for w in works:
            w.wait()
        torch.cuda.synchronize()
        for i, (x, w) in enumerate(zip(xs, wants)):
            same(x, w, f"call {i}")
        return "16 calls"

    @check("all_reduce on two user streams, no wait, the first held back on rank 0")
    def _():
        s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
        xs = [rand(2048, torch.bfloat16, 200 + i) for i in range(8)]
        wants = [reference(x) for x in xs]
        torch.cuda.synchronize()
        for i, x in enumerate(xs):
            s = s1 if i % 2 == 0 else s2
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                if rank == 0 and i % 2 == 0:
                    torch.cuda._sleep(1_000_000)
                dist.all_reduce(x)
        torch.cuda.synchronize()
        for i, (x, w) in enumerate(zip(xs, wants)):
            same(x, w, f"call {i}")
        return "8 calls"

    @check("reduce to every root")
    def _():
        x = rand(5003, torch.float16, 300)
        keep = x.clone()
        want = reference(x)
        for root in list(range(world)) + [0]:
            y = keep.clone()
            dist.reduce(y, dst=root)
            torch.cuda.synchronize()
            if rank == root:
                same(y, want, f"root {root}")
            elif detcoll:
                assert torch.equal(y, keep), f"rank {rank}'s buffer changed by a reduce to {root}"
        return f"roots 0..{world - 1}, 0"

    @check("FSDP-size reduce_scatter_tensor (far over the capacity)")
    def _():
        n = int(os.environ.get("PATTERNS_RS_ELEMENTS", 48 << 20)) // world * world  # bf16: 96 MiB per rank
        x = rand(n, torch.bfloat16, 400)
        want = reference(x)[rank * (n // world):(rank + 1) * (n // world)]
        y = torch.empty(n // world, dtype=torch.bfloat16, device=dev)
        dist.reduce_scatter_tensor(y, x)
        torch.cuda.synchronize()
        same(y, want, "shard")
        return f"{n * 2 >> 20} MiB per rank"

    @check("reduce_scatter_tensor of NaNs (canonical 0x7fff when detcoll serves it)")
    def _():
        x = torch.full((16 * world,), float("nan"), dtype=torch.bfloat16, device=dev)
        x.view(torch.int16)[:] = 0x7FC2
        y = torch.empty(16, dtype=torch.bfloat16, device=dev)
        dist.reduce_scatter_tensor(y, x)
        torch.cuda.synchronize()
        got = sorted({int(v) & 0xFFFF for v in y.view(torch.int16).cpu().tolist()})
        return f"bits {[hex(v) for v in got]}"

    @check("eight process groups of every rank, one all_reduce each; GPU memory")
    def _():
        torch.cuda.synchronize()
        dist.barrier()
        before = device_used()
        groups = [dist.new_group(list(range(world))) for _ in range(8)]
        for i, g in enumerate(groups):
            x = rand(4096, torch.bfloat16, 500 + i)
            everyone = [torch.empty_like(x) for _ in range(world)]
            dist.all_gather(everyone, x, group=g)
            want = dtorch._int_view(dtorch.reference(everyone))
            dist.all_reduce(x, group=g)
            same(x, want, f"group {i}")
        torch.cuda.synchronize()
        dist.barrier()
        time.sleep(0.5)
        info["eight_groups_used_gb"] = round((device_used() - before) / 1e9, 3)
        info["default_group_used_gb"] = round((before - used0) / 1e9, 3)
        for g in groups:
            dist.destroy_process_group(g)
        return f"device memory used rose by {info['eight_groups_used_gb']} GB (all ranks on the device)"

    dist.barrier()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    info["results"] = results
    with open(f"{out}.{rank}", "w") as f:
        json.dump(info, f, indent=1)
    for r in results:
        print(f"rank {rank}: {'PASS' if r['ok'] else 'FAIL'}: {r['check']}: {r.get('detail', r.get('error'))}", flush=True)
    sys.exit(1 if any(not r["ok"] for r in results) else 0)


def device_used():
    free, total = torch.cuda.mem_get_info()
    return total - free


if __name__ == "__main__":
    main()
