#!/bin/bash
# Device run 1 of issue 25's library across hosts and the kills, and the
# kernels of the sum's 32-bit lanes, one H200: the kernels built ahead of
# time; under MPS the conformance suite at W=1 and 2 with the graph and
# T-over-hosts cases, verify at W=4 (every operator), bench of the bf16
# sum before the operators (3f4041b) and now; unmodified torch
# (gpu_torch.py) under libdetcoll-nccl across 2 virtual hosts of 1 rank
# and of 2 ranks (DETCOLL_NCCL_HOSTS=serve); kills of rank 1 in Open,
# calls and Close across two virtual hosts, 5 times each, and on one host
# once each.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
. tools/gpu-checks.sh
cp .gpu/commit.txt "$O/"
export DETCOLL_CACHE_DIR=/tmp/dc-kernel-cache
step aot 160 "$G/aot" -out "$O/aot" -cache
ls -la "$O/aot" >> "$O/summary.txt"
mps_start
step conformance 200 "$G/cuda.test" -test.run 'TestConformanceGPU|TestDeviceGraphGPU|TestTreeReduceGPU' -test.v -test.timeout 190s
step verify-w4 120 "$G/detcoll" verify --backend cuda -n 4
B="--backend cuda --reference none --warmup 5 --iterations 20 --operations all_reduce --size-bytes 1KiB,1MiB,16MiB,256MiB"
step bench-before-w2 30 env DETCOLL_COMMIT=3f4041b "$G/before/detcoll" bench -n 2 $B --output "$O/bench-before-w2.json"
step bench-after-w2 30 "$G/detcoll" bench -n 2 $B --output "$O/bench-after-w2.json"
mps_stop
check_torch_hosts 2 1
check_torch_hosts 2 2
KILL_REPEATS=5 KILL_WHERE=two-hosts check_kills
KILL_WHERE=one-host check_kills
check_summary
for f in "$O"/bench-*.log; do echo "== $f"; grep -E "graph_steady" "$f"; done >> "$O/summary.txt"
