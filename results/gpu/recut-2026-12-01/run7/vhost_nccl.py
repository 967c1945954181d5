# Can two processes on one GPU be two NCCL "hosts"? NCCL refuses two ranks
# on one GPU of one host ("Duplicate GPU detected"); NCCL_HOSTID gives each
# rank a host of its own, so NCCL must go through its network transport.
import os, sys, time
rank = int(os.environ["RANK"])
os.environ["NCCL_HOSTID"] = f"detcoll-vhost-{rank}"
import torch, torch.distributed as dist
dist.init_process_group("nccl", device_id=torch.device("cuda:0"))
x = torch.full((1 << 20,), float(rank + 1), device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
ok = x[0].item() == 3.0 and x[-1].item() == 3.0
y = torch.empty(2 << 20, device="cuda")
dist.all_gather_into_tensor(y, x)
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(20):
    dist.all_reduce(x)
torch.cuda.synchronize()
print(f"rank {rank}: all_reduce ok={ok}, 20 x 4 MiB in {(time.perf_counter()-t)*1e3:.1f} ms", flush=True)
dist.destroy_process_group()
