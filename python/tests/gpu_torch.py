"""torch.distributed over libdetcoll-nccl, on GPUs (the GPU machine's check).

Run on every rank by torchrun, with the library preloaded:

    LD_PRELOAD=/path/libdetcoll-nccl.so torchrun --nproc-per-node W tests/gpu_torch.py OUT.json

An unmodified torch.distributed program: each check is what a user's code
does, and the bits of every reduction (sum, average, max, min, pre-multiplied
sum) are compared with detcoll's reference (detcoll.torch.reference,
computed on the CPU from every rank's inputs).
Writes one JSON object per rank (OUT.json.RANK) and exits 1 on any failure.

Across hosts (DETCOLL_NCCL_HOSTS=serve, DETCOLL_VIRTUAL_HOSTS=H on one machine,
NCCL_HOSTID per host) the same checks hold, the reference being the flat tree
over every rank, which is what one host of as many ranks computes, in CUDA
graphs too.
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
            detail = f()
            results.append({"check": name, "ok": True, "detail": detail, "s": round(time.time() - t0, 3)})
        except Exception as e:  # noqa: BLE001 - every failure is reported
            results.append({"check": name, "ok": False, "error": f"{type(e).__name__}: {e}",
                            "trace": traceback.format_exc(), "s": round(time.time() - t0, 3)})
        return f
    return wrap


def bits(t):
    return dtorch._int_view(t.contiguous().cpu())


def gather_inputs(x):
    everyone = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, x)
    return everyone


def rand(n, dt, salt):
    g = torch.Generator().manual_seed(12345 + 7919 * salt + dist.get_rank())
    return (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dt).cuda()


def main():
    out = sys.argv[1]
    # Ranks may share a GPU (two NCCL hosts on one GPU).
    local = int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()
    torch.cuda.set_device(local)
    if os.environ.get("GPU_TORCH_EAGER") == "1":
        # Eager init: the communicator is made here, and new_group splits it
        # (ncclCommSplit) instead of making one of its own.
        dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    else:
        dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    info = {"rank": rank, "world": world, "eager": os.environ.get("GPU_TORCH_EAGER") == "1",
            "preloaded": dtorch.enabled(), "torch": torch.__version__,
            "nccl": ".".join(map(str, torch.cuda.nccl.version())), "device": torch.cuda.get_device_name()}

    @check("library loaded")
    def _():
        assert dtorch.enabled(), "libdetcoll-nccl is not in the process"
        return "yes"

    @check("verify: all_reduce bits = reference tree, offset and repeat (bf16/fp16/fp32/fp64)")
    def _():
        return len(dtorch.verify(sizes=(1, 7, 1000, 65536, 1 << 20, 3 << 20)))

    @check("NaN canonical (detcoll served the sum, not NCCL's copy)")
    def _():
        x = torch.full((16,), float("nan"), dtype=torch.bfloat16).cuda()
        x.view(torch.int16)[:] = 0x7FC2  # a NaN with a payload
        dist.all_reduce(x)
        got = set(bits(x).tolist())
        assert got == {0x7FFF}, f"NaN bits after all_reduce: {[hex(v) for v in got]}"
        return "0x7fc2 -> 0x7fff"

    @check("over the capacity: split into calls, same bits (DETCOLL_CAPACITY)")
    def _():
        n = (int(os.environ.get("CHUNK_ELEMENTS", 3 << 20)))
        x = rand(n, torch.float32, 1)
        want = bits(dtorch.reference(gather_inputs(x)))
        dist.all_reduce(x)
        assert torch.equal(bits(x), want)
        return f"{n} float32"

    @check("reduce_scatter_tensor = the reference's shard")
    def _():
        for dt in (torch.bfloat16, torch.float32):
            n = 4096 * world
            x = rand(n, dt, 2)
            want = bits(dtorch.reference(gather_inputs(x)))[rank * 4096:(rank + 1) * 4096]
            y = torch.empty(4096, dtype=dt, device="cuda")
            dist.reduce_scatter_tensor(y, x)
            assert torch.equal(bits(y), want), f"{dt}"
        return "bf16, fp32"

    @check("reduce to root 0 = the reference at the root; other ranks' buffers untouched")
    def _():
        x = rand(5000, torch.float16, 3)
        keep = x.clone()
        want = bits(dtorch.reference(gather_inputs(x)))
        dist.reduce(x, dst=0)
        if rank == 0:
            assert torch.equal(bits(x), want)
        else:
            assert torch.equal(bits(x), bits(keep)), "a non-root rank's buffer changed"
        return "ok"

    @check("all_gather_into_tensor, broadcast, all_to_all_single, barrier (the real NCCL's)")
    def _():
        x = rand(1000, torch.float32, 4)
        y = torch.empty(1000 * world, device="cuda")
        dist.all_gather_into_tensor(y, x)
        assert torch.equal(bits(y[rank * 1000:(rank + 1) * 1000]), bits(x))
        b = rand(100, torch.float32, 5)
        dist.broadcast(b, src=0)
        t = torch.arange(world * 4, dtype=torch.float32, device="cuda") + 100 * rank
        o = torch.empty_like(t)
        dist.all_to_all_single(o, t)
        dist.barrier()
        return "ok"

    @check("send/recv")
    def _():
        if world == 1:
            return "skipped at W=1 (no peer)"
        x = rand(64, torch.float32, 6)
        if rank == 0:
            dist.send(x, dst=1)
        elif rank == 1:
            y = torch.empty_like(x)
            dist.recv(y, src=0)
        return "ok"

    @check("new_group subgroup (ncclCommSplit or a new communicator), sum bits")
    def _():
        g = dist.new_group(list(range(world)))
        x = rand(3000, torch.bfloat16, 7)
        everyone = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(everyone, x, group=g)
        want = bits(dtorch.reference(everyone))
        dist.all_reduce(x, group=g)
        assert torch.equal(bits(x), want)
        return "ok"

    @check("CUDA graph: a captured all_reduce and reduce_scatter replay with detcoll's bits, new inputs each time")
    def _():
        # Across hosts too: each call checks its signatures on the device.
        n = 1 << 16
        static = rand(n, torch.bfloat16, 8)
        src = rand(n * world, torch.float32, 9)
        shard = torch.empty(n, dtype=torch.float32, device="cuda")
        dist.all_reduce(static)  # warm up outside the capture, as torch advises
        dist.reduce_scatter_tensor(shard, src)
        torch.cuda.synchronize()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=s):
                dist.all_reduce(static)
                dist.reduce_scatter_tensor(shard, src)
        torch.cuda.current_stream().wait_stream(s)
        for k in range(3):
            x, y = rand(n, torch.bfloat16, 20 + k), rand(n * world, torch.float32, 30 + k)
            want_x = bits(dtorch.reference(gather_inputs(x)))
            want_y = bits(dtorch.reference(gather_inputs(y)))[rank * n:(rank + 1) * n]
            static.copy_(x)
            src.copy_(y)
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(bits(static), want_x), f"replay {k}: the all_reduce's bits differ"
            assert torch.equal(bits(shard), want_y), f"replay {k}: the reduce_scatter's bits differ"
        return "3 replays of 2 calls"

    def operand(n, dt, salt):
        # Random values, a NaN on rank 0 only (every rank's max and min
        # must show it, canonical) and zeros of both signs.
        x = rand(n, dt, salt)
        if rank == 0:
            x[3] = float("nan")
        x[5] = -0.0
        x[6] = 0.0 if rank % 2 == 0 else -0.0
        return x

    def operators(dt):
        """(name, ReduceOp, reference op, factors): AVG, MAX, MIN and
        PREMUL_SUM with a host factor (a Python float: NCCL's
        ncclScalarHostImmediate) and with a device one (a 0-dim CUDA tensor:
        ncclScalarDevice), each rank its own. PyTorch takes a bfloat16
        call's device factor as float32 (and NCCL reads its low half, as it
        does of the float32 PyTorch hands it for a host one: the reference
        says so)."""
        host = [1 / 3 + 0.0625 * r for r in range(world)]
        fdt = torch.float32 if dt == torch.bfloat16 else dt
        device = torch.tensor(0.7 - 0.125 * rank, dtype=fdt, device="cuda")
        devices = gather_inputs(device.reshape(1))  # every rank's factor, as its bits
        return [("avg", dist.ReduceOp.AVG, "avg", None), ("max", dist.ReduceOp.MAX, "max", None),
                ("min", dist.ReduceOp.MIN, "min", None),
                ("premul_sum host", dist._make_nccl_premul_sum(host[rank]), "premul_sum", host),
                ("premul_sum device", dist._make_nccl_premul_sum(device), "premul_sum", devices)]

    @check("all_reduce with AVG, MAX, MIN, PREMUL_SUM (host and device factor) = the reference's bits (bf16/fp32, 1000 and 1<<20)")
    def _():
        n_checks = 0
        for dt in (torch.bfloat16, torch.float32):
            for n in (1000, 1 << 20):
                x = operand(n, dt, 9)
                everyone = gather_inputs(x)
                for name, op, ref, factors in operators(dt):
                    want = bits(dtorch.reference(everyone, ref, factors))
                    got = x.clone()
                    dist.all_reduce(got, op=op)
                    dtorch._same(bits(got), want, f"{dt} n={n} {name}")
                    n_checks += 1
        return f"{n_checks} calls bit-equal"

    @check("reduce_scatter_tensor with AVG and PREMUL_SUM (FSDP2's gradients) = the reference's shard (bf16/fp32)")
    def _():
        if world == 1:
            return "skipped at W=1 (torch copies at world size 1: no NCCL call)"
        n_checks = 0
        for dt in (torch.bfloat16, torch.float32):
            for n in (1000, 1 << 20):
                x = operand(n * world, dt, 10)
                everyone = gather_inputs(x)
                for name, op, ref, factors in operators(dt):
                    if ref not in ("avg", "premul_sum"):
                        continue
                    want = bits(dtorch.reference(everyone, ref, factors))[rank * n:(rank + 1) * n]
                    y = torch.empty(n, dtype=dt, device="cuda")
                    dist.reduce_scatter_tensor(y, x, op=op)
                    dtorch._same(bits(y), want, f"{dt} shard of {n} {name}")
                    n_checks += 1
        return f"{n_checks} calls bit-equal"

    dist.barrier()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    info["results"] = results
    with open(f"{out}.{rank}", "w") as f:
        json.dump(info, f, indent=1)
    failed = [r["check"] for r in results if not r["ok"]]
    for r in results:
        print(f"rank {rank}: {'PASS' if r['ok'] else 'FAIL'}: {r['check']}: {r.get('detail', r.get('error'))}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
