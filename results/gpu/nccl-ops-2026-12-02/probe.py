import os
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(0)
for dt in (torch.bfloat16, torch.float16, torch.float32):
    x = torch.full((4,), 3.0, dtype=dt, device="cuda")
    iv = {2: torch.int16, 4: torch.int32}[dt.itemsize]
    for f in (1 / 3, 0.5, 0.7):
        y = x.clone()
        dist.all_reduce(y, op=dist._make_nccl_premul_sum(f))
        print(dt, "host", f, y[0].item(), hex(y.view(iv)[0].item() & 0xFFFFFFFF), flush=True)
    for fdt in (dt, torch.float32):
        try:
            t = torch.tensor(0.7, dtype=fdt, device="cuda")
            y = x.clone()
            dist.all_reduce(y, op=dist._make_nccl_premul_sum(t))
            print(dt, "device", fdt, y[0].item(), hex(y.view(iv)[0].item() & 0xFFFFFFFF), flush=True)
        except Exception as e:  # noqa: BLE001
            print(dt, "device", fdt, "ERR", str(e).splitlines()[0][:200], flush=True)
dist.destroy_process_group()
