#!/bin/bash
# Device run 1 of issue 22 (one H200): the floors under MPS (mps_floor.cu,
# tools/perf/ll_floor.cu), detcoll bench at W=2 before (.gpu/before: the
# commit before the grid cap) and after, in this one call; after at W=3,
# 4 and 8, before at W=4 from 1 MiB (deadlocked: bounded by --timeout);
# the kernels built ahead of time (tools/aot) with their time.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache-$$ DETCOLL_CUDA_SHARE_DEVICES=1
start=$(date +%s)
log() { echo "$(date +%T) +$(( $(date +%s) - start ))s $*" | tee -a "$O/summary.txt"; }
step() {
	local name=$1 t=$2; shift 2
	local s=$(date +%s)
	timeout -k 5 "$t" "$@" > "$O/$name.log" 2>&1
	log "$name rc=$? $(( $(date +%s) - s ))s"
}
MPS=0
finish() {
	[ $MPS = 1 ] && echo quit | nvidia-cuda-mps-control
	log done
	cd "$OUT" && tar czf run.tgz r && rm -rf r
}
trap finish EXIT
cp .gpu/commit.txt "$O/"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$O/gpu.txt" 2>&1
step build-floors 120 bash -c "nvcc -O2 -arch=sm_90 -o $O/mps_floor .gpu/mps_floor.cu && nvcc -O2 -arch=sm_90 -o $O/ll_floor tools/perf/ll_floor.cu"

export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d)
nvidia-cuda-mps-control -d && MPS=1
sleep 1
ls -la "$CUDA_MPS_PIPE_DIRECTORY" > "$O/mps-pipe-dir.txt" 2>&1
pair() { # name prog: the two roles of a two-process floor program
	local d=$(mktemp -d)
	"$1" 1 "$d" > "$O/$2-1.log" 2>&1 &
	"$1" 0 "$d" > "$O/$2-0.log" 2>&1
	wait
}
step mps-floor 60 pair "$O/mps_floor" mps-floor
step ll-floor 60 pair "$O/ll_floor" ll-floor
cat "$O"/mps-floor-*.log "$O"/ll-floor-*.log >> "$O/summary.txt"

B="--backend cuda --reference none --warmup 5 --iterations 30"
SMALL=1KiB,64KiB,1MiB
ALL=1KiB,64KiB,1MiB,16MiB,256MiB
step bench-before-w2 240 env DETCOLL_COMMIT=55d3f95 "$G/before/detcoll" bench -n 2 $B --operations all_reduce,reduce_scatter,all_gather --size-bytes $ALL --output "$O/bench-before-w2.json"
step bench-after-w2 240 "$G/detcoll" bench -n 2 $B --operations all_reduce,reduce_scatter,all_gather --size-bytes $ALL --output "$O/bench-after-w2.json"
step bench-after-w4 150 "$G/detcoll" bench -n 4 $B --operations all_reduce --size-bytes $ALL --output "$O/bench-after-w4.json"
step bench-after-w8 180 "$G/detcoll" bench -n 8 $B --operations all_reduce --size-bytes 1KiB,64KiB,1MiB,16MiB --output "$O/bench-after-w8.json"
step bench-before-w4 90 env DETCOLL_COMMIT=55d3f95 "$G/before/detcoll" bench -n 4 $B --timeout 15s --operations all_reduce --size-bytes 1KiB,1MiB,16MiB --output "$O/bench-before-w4.json"
echo quit | nvidia-cuda-mps-control; MPS=0; sleep 1
step aot 240 "$G/aot" -out "$O/aot" -j 16
ls -la "$O/aot" >> "$O/summary.txt" 2>&1
for f in "$O"/bench-*.log; do echo "== $f"; tail -25 "$f"; done >> "$O/summary.txt"
