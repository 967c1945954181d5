#!/bin/bash
# Device run 2, second call: the conformance suite under MPS (W=1 and 2,
# the reductions and gathers at W=3, 4 and 8, two and four communicators
# on unordered streams) and the soak at W=2 and W=8.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
export DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache-$$
cp .gpu/commit.txt "$O/"
mps_start
step conformance 330 "$G/cuda.test" -test.run 'TestConformanceGPU|TestDeviceWiderWorldsGPU|TestDeviceFourCommsGPU|TestDeviceTwoCommsGPU' -test.v -test.timeout 320s
export DETCOLL_CUDA_SHARE_DEVICES=1
step soak-w8 100 "$G/detcoll" soak --backend cuda -n 8 --duration 60s --output "$O/soak-w8.json"
step soak-w2 70 "$G/detcoll" soak --backend cuda -n 2 --duration 45s --output "$O/soak-w2.json"
grep -E "^(=== RUN|--- |    ---|ok|FAIL|PASS)|rank .*:" "$O/conformance.log" | tail -60 >> "$O/summary.txt"
for f in "$O"/soak-*.log; do echo "== $f"; tail -12 "$f"; done >> "$O/summary.txt"
