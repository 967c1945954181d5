#!/bin/bash
# Device run 14 (one H200): the kernel re-cut and the W=1 one-pass path
# (proto.Alone), commit in .gpu/commit.txt: the GPU suite (W=2 cases
# time-sliced on the one GPU), memcheck over the W=1 cases, verify at W=1
# and W=2 (both ranks on the one GPU), a W=2 soak.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export DETCOLL_REQUIRE_GPU=1
start=$(date +%s)
log() { echo "$(date +%T) +$(( $(date +%s) - start ))s $*" | tee -a "$O/summary.txt"; }
step() {
	local name=$1 t=$2; shift 2
	local s=$(date +%s)
	timeout -k 5 "$t" "$@" > "$O/$name.log" 2>&1
	log "$name rc=$? $(( $(date +%s) - s ))s"
}
finish() { log done; cd "$OUT" && tar czf run.tgz r && rm -rf r; }
trap finish EXIT
cp .gpu/commit.txt "$O/"
step suite 220 "$G/cuda.test" -test.count=1 -test.short -test.run 'GPU' -test.skip 'WiderWorlds|Latency|NCCL' -test.timeout 215s -test.v
step verify-w1 60 "$G/detcoll" verify --backend cuda -n 1
step memcheck-w1 150 compute-sanitizer --tool memcheck "$G/cuda.test" -test.count=1 -test.short -test.run 'TestConformanceGPU/.*/W=1$|TestDeviceBadInputGPU' -test.timeout 140s
step verify-w2 90 env DETCOLL_CUDA_SHARE_DEVICES=1 "$G/detcoll" verify --backend cuda -n 2
step soak-w2 70 env DETCOLL_CUDA_SHARE_DEVICES=1 "$G/detcoll" soak --backend cuda -n 2 --duration 50s --output "$O/soak-w2.json"
