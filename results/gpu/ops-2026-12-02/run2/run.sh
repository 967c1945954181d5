#!/bin/bash
# Device run 2 of issue 23 on the GPU (one H200), after run 1's compile
# failure (generic lambdas): the kernels of every operator and integer
# type built ahead of time (tools/aot, time and sizes); under MPS the
# conformance operator, reduce, mismatch and graph cases at W=1 and 2,
# T over hosts with every node operator and Average, verify at W=2 (the
# operator rows) and across 2 virtual hosts (1 rank each: hier's device
# executor with every operator), and bench of the sum before (3f4041b) and
# after and of max, avg and premulsum after, at W=2.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
. tools/gpu-checks.sh
cp .gpu/commit.txt "$O/"
export DETCOLL_CACHE_DIR=/tmp/dc-kernel-cache
step aot 220 "$G/aot" -out "$O/aot" -cache
ls -la "$O/aot" >> "$O/summary.txt"
mps_start
step conformance 200 "$G/cuda.test" -test.run 'TestConformanceGPU/(OperatorsMatchReference|ReduceMatchesReference|MismatchFailsEveryRank)|TestDeviceGraphGPU|TestTreeReduceGPU' -test.v -test.timeout 190s
step verify-w2 60 "$G/detcoll" verify --backend cuda -n 2
step hosts-2x1 60 env $NET "$G/detcoll" verify --backend cuda -n 2 --hosts 2
B="--backend cuda --reference none --warmup 5 --iterations 20 --operations all_reduce --size-bytes 1KiB,1MiB,16MiB,256MiB"
step bench-before-w2 40 env DETCOLL_COMMIT=3f4041b "$G/before/detcoll" bench -n 2 $B --output "$O/bench-before-w2.json"
step bench-after-w2 40 "$G/detcoll" bench -n 2 $B --output "$O/bench-after-w2.json"
for op in max avg premulsum; do
	step bench-$op-w2 30 "$G/detcoll" bench -n 2 $B --op $op --output "$O/bench-$op-w2.json"
done
mps_stop
check_summary
for f in "$O"/bench-*.log; do echo "== $f"; grep -E "^all_reduce|^#" "$f" | head -20; done >> "$O/summary.txt"
