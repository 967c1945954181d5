#!/bin/bash
# Device run 1 of issue 23 on the GPU (one H200): the kernels of every
# operator and integer type, built ahead of time (tools/aot, its time and
# sizes), then under MPS the conformance suite (W=1 and W=2: the operator
# cases on device memory, the mismatch cases, the graph case with
# PreMulSumDevice read anew at each replay), verify at W=2 and 4 (operator
# rows), and bench of the sum before (.gpu/before: 3f4041b) and after, and
# of max, avg and premulsum after, at W=2.
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
step conformance 270 "$G/cuda.test" -test.run 'TestConformanceGPU/(OperatorsMatchReference|ReduceMatchesReference|MismatchFailsEveryRank)|TestDeviceGraphGPU' -test.v -test.timeout 260s
step verify-w2 60 "$G/detcoll" verify --backend cuda -n 2
B="--backend cuda --reference none --warmup 5 --iterations 20 --operations all_reduce --size-bytes 1KiB,64KiB,1MiB,16MiB,256MiB"
step bench-before-w2 45 env DETCOLL_COMMIT=3f4041b "$G/before/detcoll" bench -n 2 $B --output "$O/bench-before-w2.json"
step bench-after-w2 45 "$G/detcoll" bench -n 2 $B --output "$O/bench-after-w2.json"
for op in max avg premulsum; do
	step bench-$op-w2 30 "$G/detcoll" bench -n 2 $B --op $op --output "$O/bench-$op-w2.json"
done
mps_stop
check_summary
for f in "$O"/bench-*.log; do echo "== $f"; tail -12 "$f"; done >> "$O/summary.txt"
