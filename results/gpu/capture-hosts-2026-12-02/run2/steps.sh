# Device run 2: the fixed GPU tests across hosts (graphs destroyed before
# Close; a mismatch or a skipped call reported by the call itself allowed),
# verify across 2 hosts of 1 and 2 ranks and at W=2 on one host, torch
# under the library across 2 hosts of 2, torch's all_reduce latency across
# 2 hosts of 1 under NCCL and under the library, and kills across hosts.
check_hosts_device
mps_start
step hosts-2x1 120 env $NET "$G/detcoll" verify --backend cuda -n 2 --hosts 2
step hosts-2x2 150 env $NET "$G/detcoll" verify --backend cuda -n 4 --hosts 2
step verify-w2 120 "$G/detcoll" verify --backend cuda -n 2
mps_stop
check_torch_hosts 2 2
check_latency_hosts 2 1
KILL_WHERE=two-hosts check_kills
