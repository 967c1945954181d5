#!/bin/bash
# Device run 2 of issue 22 (one H200), first of two calls: the floors under
# MPS; the first Open on an empty kernel cache (kernels built ahead of
# time); W=2 all-reduce before (.gpu/before) and after at launch caps of
# 32, 48 and 64 blocks (DETCOLL_CUDA_MAX_BLOCKS); bench at W=3, 4 and 8;
# verify at W=2, 3, 4 and 8. All ranks on the one GPU under MPS.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
export DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache-$$ DETCOLL_CUDA_SHARE_DEVICES=1
cp .gpu/commit.txt "$O/"
step build-floors 120 bash -c "nvcc -O2 -arch=sm_90 -o $O/mps_floor .gpu/mps_floor.cu && nvcc -O2 -arch=sm_90 -o $O/ll_floor tools/perf/ll_floor.cu"
step first-open 120 "$G/cuda.test" -test.run 'TestOpenLoadsKernelsBuiltAheadOfTimeGPU' -test.v
mps_start
ls -la "$CUDA_MPS_PIPE_DIRECTORY" > "$O/mps-pipe-dir.txt" 2>&1
pair mps-floor "$O/mps_floor"
pair ll-floor "$O/ll_floor"
B="--backend cuda --reference none --warmup 5 --iterations 30"
step bench-before-w2 150 env DETCOLL_COMMIT=55d3f95 "$G/before/detcoll" bench -n 2 $B --operations all_reduce --size-bytes 1KiB,1MiB,16MiB,256MiB --output "$O/bench-before-w2.json"
for cap in 32 48 64; do
	step bench-cap$cap-w2 90 env DETCOLL_CUDA_MAX_BLOCKS=$cap "$G/detcoll" bench -n 2 $B --operations all_reduce --size-bytes 1KiB,1MiB,16MiB,256MiB --output "$O/bench-cap$cap-w2.json"
done
step bench-w3 90 "$G/detcoll" bench -n 3 $B --operations all_reduce --size-bytes 1KiB,64KiB,1MiB,16MiB --output "$O/bench-w3.json"
step bench-w8 150 "$G/detcoll" bench -n 8 $B --operations all_reduce,reduce_scatter,all_gather --size-bytes 1KiB,64KiB,1MiB,16MiB --output "$O/bench-w8.json"
for n in 2 3 4 8; do
	step verify-w$n 120 "$G/detcoll" verify --backend cuda -n $n
done
for f in "$O"/bench-*.log "$O"/verify-*.log "$O"/first-open.log; do echo "== $f"; tail -22 "$f"; done >> "$O/summary.txt"
