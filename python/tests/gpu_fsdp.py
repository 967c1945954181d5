"""An FSDP2 training step over libdetcoll-nccl (the GPU machine's check).

Run on every rank by torchrun, with the library preloaded and its record:

    LD_PRELOAD=/path/libdetcoll-nccl.so DETCOLL_NCCL_REPORT=report.json \\
        torchrun --nproc-per-node W tests/gpu_fsdp.py OUT.json

An unmodified FSDP2 program (fully_shard, forward, backward, an optimizer
step) in float32 and in bfloat16 mixed precision. The test only watches:
torch.distributed.reduce_scatter_tensor is wrapped to keep each gradient
reduce-scatter's input, operator and output, and after the step every
output is compared, bit for bit, with detcoll's reference
(detcoll.torch.reference) of all ranks' inputs for that operator. The
library's record (DETCOLL_NCCL_REPORT) says whether detcoll served the
calls. Writes one JSON object per rank (OUT.json.RANK); exits 1 on any
failure.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from detcoll import torch as dtorch  # noqa: E402


def op_name(op):
    """The operator's name as reference takes it, or None for one it
    cannot name (a PREMUL_SUM operator carries its factor inside)."""
    for name in ("SUM", "AVG", "MAX", "MIN"):
        if op == getattr(dist.ReduceOp, name):
            return name.lower()
    return None


def main():
    out = sys.argv[1]
    local = int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    calls = []
    real = dist.reduce_scatter_tensor

    def watched(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
        kept = input.detach().clone()
        work = real(output, input, op=op, group=group, async_op=async_op)
        calls.append({"output": output, "input": kept, "op": op, "group": group})
        return work

    dist.reduce_scatter_tensor = watched
    results = []
    for label, policy in (("float32", None),
                          ("bfloat16 params, float32 reduce", MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                                                  reduce_dtype=torch.float32)),
                          ("bfloat16", MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16))):
        torch.manual_seed(0)  # every rank the same model
        model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).cuda()
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, **({"mp_policy": policy} if policy else {}))
        fully_shard(model, **({"mp_policy": policy} if policy else {}))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(1000 + rank)  # every rank its own batch
        x = torch.randn(48, 64, generator=g).cuda()
        calls.clear()
        loss = model(x).float().square().mean()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        checked, errors = 0, []
        for i, c in enumerate(calls):
            name = op_name(c["op"])
            if name is None:
                errors.append(f"call {i}: an operator the test cannot name ({c['op']})")
                continue
            group = c["group"]
            everyone = [torch.empty_like(c["input"]) for _ in range(dist.get_world_size(group))]
            dist.all_gather(everyone, c["input"], group=group)
            want = dtorch.reference([e.cpu() for e in everyone], op=name)
            me = dist.get_rank(group)
            shard = want.reshape(len(everyone), -1)[me]
            got = c["output"].detach().cpu().reshape(-1)
            if not torch.equal(dtorch._int_view(got.contiguous()), dtorch._int_view(shard.contiguous())):
                bad = (dtorch._int_view(got) != dtorch._int_view(shard)).nonzero()
                errors.append(f"call {i} ({name}, {got.dtype}, {got.numel()} elements): {bad.numel()} differ, "
                              f"first at {bad[0].item()}: {got[bad[0]].item()!r}, want {shard[bad[0]].item()!r}")
            checked += 1
        results.append({"check": f"FSDP2 step, {label}: gradient reduce-scatters = the reference",
                        "ok": not errors and checked > 0, "calls": len(calls), "checked": checked,
                        "ops": sorted({str(op_name(c["op"])) for c in calls}),
                        "dtypes": sorted({str(c["input"].dtype) for c in calls}), "errors": errors})
    dist.reduce_scatter_tensor = real
    dist.barrier()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    info = {"rank": rank, "world": world, "preloaded": dtorch.enabled(), "torch": torch.__version__,
            "results": results}
    with open(f"{out}.{rank}", "w") as f:
        json.dump(info, f, indent=1)
    for r in results:
        print(f"rank {rank}: {'PASS' if r['ok'] else 'FAIL'}: {r['check']}: {r['checked']} of {r['calls']} calls, "
              f"ops {r['ops']}, {r['dtypes']}" + (f": {r['errors'][:3]}" if r["errors"] else ""))
    sys.exit(0 if all(r["ok"] for r in results) else 1)


if __name__ == "__main__":
    main()
