# Device run 3 of issue 24's step table (one H200): the GPU tests across
# two virtual hosts (graphs, mismatches, a skipped call), the soak at W=8
# and W=2 under MPS (every result checked bit for bit), and unmodified
# PyTorch through libdetcoll-nccl at W=2 (gpu_torch.py) and across 2 hosts
# of 2 ranks, all on the kernels of the step table.
check_hosts_device
mps_start
step soak-w8 75 "$G/detcoll" soak --backend cuda -n 8 --duration 40s --output "$O/soak-w8.json"
step soak-w2 50 "$G/detcoll" soak --backend cuda -n 2 --duration 30s --output "$O/soak-w2.json"
mps_stop
check_torch
check_torch_hosts 2 2
