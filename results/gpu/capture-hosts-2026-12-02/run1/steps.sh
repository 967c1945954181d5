# Device run 1: calls across hosts checked on the device (issue 25 item 3).
# nccl.test's GPU tests across two virtual hosts (graphs replayed with new
# inputs, mismatches eager and in graphs, a skipped call), torch under the
# library across hosts with its graph check, and bench across hosts
# against NCCL, before (5fffb12: the host meeting) and after, in one call.
check_hosts_device
check_torch_hosts 2 1
check_bench_hosts 2 1
