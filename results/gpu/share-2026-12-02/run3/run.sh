#!/bin/bash
# Device run 3 of issue 22 (one H200): what each part of detcoll's LL
# kernel costs against the design's floor (tools/perf/ll_floor.cu's
# variants) with detcoll's W=2 all-reduce of 1 KiB in the same call; and
# W=8 on the one GPU under MPS with 32-block launches and kernels that
# keep 2 blocks per multiprocessor (verify, bench), its kernels compiled
# into the cache first (tools/aot -cache).
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
export DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache
cp .gpu/commit.txt "$O/"
step build-floor 120 nvcc -O2 -arch=sm_90 -o "$O/ll_floor" tools/perf/ll_floor.cu
step aot-cache 120 "$G/aot" -out "$O/aot" -archs sm_90 -worlds 2,8 -cache
mps_start
pair ll-floor "$O/ll_floor"
export DETCOLL_CUDA_SHARE_DEVICES=1
B="--backend cuda --reference none --warmup 5 --iterations 30"
step bench-w2 60 "$G/detcoll" bench -n 2 $B --operations all_reduce --size-bytes 1KiB,64KiB --output "$O/bench-w2.json"
step verify-w8 150 "$G/detcoll" verify --backend cuda -n 8
step bench-w8 150 "$G/detcoll" bench -n 8 $B --operations all_reduce,reduce_scatter,all_gather --size-bytes 1KiB,64KiB,1MiB,16MiB --output "$O/bench-w8.json"
for f in "$O"/ll-floor-*.log "$O"/bench-*.log "$O"/verify-*.log; do echo "== $f"; tail -22 "$f"; done >> "$O/summary.txt"
