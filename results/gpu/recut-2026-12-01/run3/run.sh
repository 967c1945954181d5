#!/bin/bash
# Device run 3 (one H200): the GPU tests of the packages the re-cut moved
# (soak's cuda rank, nccl, driver, devmem), a bench smoke with the NCCL
# reference at W=1, kill figures at W=2 (20 per phase, ranks time-sliced)
# and a second cuda soak at W=2.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export DETCOLL_REQUIRE_GPU=1
start=$(date +%s)
log() { echo "$(date +%T) +$(( $(date +%s) - start ))s $*" | tee -a "$O/summary.txt"; }
step() {
	local name=$1 t=$2; shift 2
	local s=$(date +%s)
	timeout "$t" "$@" > "$O/$name.log" 2>&1
	local rc=$?
	log "$name rc=$rc $(( $(date +%s) - s ))s"
}
finish() { log done; cd "$OUT" && tar czf run.tgz r && rm -rf r; }
trap finish EXIT
cp .gpu/commit.txt "$O/"
step gpu-tests 90 bash -c "$G/soak.test -test.count=1 -test.run TestRankGPU -test.v; $G/nccl.test -test.count=1 -test.run GPU -test.v; $G/driver.test -test.count=1 -test.run GPU -test.v; $G/devmem.test -test.count=1 -test.run GPU -test.v"
step bench-w1 60 "$G/detcoll" bench --backend cuda -n 1 --reference nccl --size-bytes 1KiB,1MiB --warmup 2 --iterations 5 --output "$O/bench-w1.json"
export DETCOLL_CUDA_SHARE_DEVICES=1 DETCOLL="$G/detcoll"
step kill-w2 150 tools/kill-figures.sh "$O/kill" 20 2 cuda
step soak-w2 250 "$G/detcoll" soak --backend cuda -n 2 --seed 2 --calls 200000 --duration 230s --output "$O/soak-w2-seed2.json"
