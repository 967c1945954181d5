#!/bin/bash
# Device run 5 of issue 22 (one H200), the last of the session's device
# time: the first Open on an empty kernel cache with the kernels built
# ahead of time (from run 4) in the binary; under MPS, four communicators
# of two ranks on four streams (same order on both ranks, launches of 48
# blocks) and the reductions at W=4 and 8 (launches of 32 blocks, the
# sweep's capacity at W=8 raised to 64 MiB).
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
export DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache-$$
cp .gpu/commit.txt "$O/"
step first-open 30 "$G/cuda.test" -test.run 'TestOpenLoadsKernelsBuiltAheadOfTimeGPU' -test.v
mps_start
step four-comms 40 "$G/cuda.test" -test.run 'TestDeviceFourCommsGPU' -test.v -test.timeout 35s
step wider-w4-w8 140 "$G/cuda.test" -test.run 'TestDeviceWiderWorldsGPU/Wider/ReduceMatchesReference/W=(4|8)' -test.v -test.timeout 135s
for f in first-open four-comms wider-w4-w8; do echo "== $f"; grep -E "^(--- |    --- |ok|FAIL|PASS)|rank .*:|first Open" "$O/$f.log" | tail -12; done >> "$O/summary.txt"
