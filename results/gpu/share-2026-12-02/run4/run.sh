#!/bin/bash
# Device run 4 of issue 22 (one H200): the kernels built ahead of time
# from this commit's source (tools/aot, into $O/aot for the repository and
# into the kernel cache for this call); the LL floor's variants; the
# conformance suite under MPS (W=1 and 2; reductions and gathers at W=3, 4
# and 8; two and four communicators on unordered streams); the soak at W=8
# and W=2; detcoll bench at W=2 before (.gpu/before, the commit before the
# grid cap) and after, and after at W=4 and 8. Every rank on the one GPU.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
export DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache
cp .gpu/commit.txt "$O/"
step build-floor 120 nvcc -O2 -arch=sm_90 -o "$O/ll_floor" tools/perf/ll_floor.cu
step aot 150 "$G/aot" -out "$O/aot" -cache
mps_start
pair ll-floor "$O/ll_floor"
step conformance 280 "$G/cuda.test" -test.run 'TestConformanceGPU|TestDeviceWiderWorldsGPU|TestDeviceFourCommsGPU|TestDeviceTwoCommsGPU' -test.v -test.timeout 270s
export DETCOLL_CUDA_SHARE_DEVICES=1
step soak-w8 75 "$G/detcoll" soak --backend cuda -n 8 --duration 40s --output "$O/soak-w8.json"
step soak-w2 50 "$G/detcoll" soak --backend cuda -n 2 --duration 30s --output "$O/soak-w2.json"
B="--backend cuda --reference none --warmup 5 --iterations 30 --operations all_reduce"
step bench-before-w2 90 env DETCOLL_COMMIT=55d3f95 "$G/before/detcoll" bench -n 2 $B --size-bytes 1KiB,64KiB,1MiB,16MiB,256MiB --output "$O/bench-before-w2.json"
step bench-after-w2 60 "$G/detcoll" bench -n 2 $B --size-bytes 1KiB,64KiB,1MiB,16MiB,256MiB --output "$O/bench-after-w2.json"
step bench-after-w4 60 "$G/detcoll" bench -n 4 $B --size-bytes 1KiB,64KiB,1MiB,16MiB,256MiB --output "$O/bench-after-w4.json"
step bench-after-w8 60 "$G/detcoll" bench -n 8 $B --size-bytes 1KiB,64KiB,1MiB,16MiB --output "$O/bench-after-w8.json"
grep -E "^(--- |    --- |ok|FAIL|PASS)|rank .*:" "$O/conformance.log" | tail -40 >> "$O/summary.txt"
for f in "$O"/soak-*.log "$O"/bench-*.log; do echo "== $f"; tail -8 "$f"; done >> "$O/summary.txt"
