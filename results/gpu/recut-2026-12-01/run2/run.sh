#!/bin/bash
# Device run 2 (one H200): the rest of the cuda GPU suite, the library by
# enable() and in strict mode, verify at W=2 (two ranks time-sliced on the
# GPU), a cuda soak at W=2 and kill figures at W=2, both time-sliced.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export DETCOLL_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
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
step suite-rest 100 "$G/cuda.test" -test.count=1 -test.run 'TestDeviceGraphGPU|TestDeviceTwoCommsGPU|TestDeviceCloseWaitsForPeersGPU|TestDeviceBarrierDuringCaptureGPU' -test.timeout 95s -test.v
TR="python3 -m torch.distributed.run --standalone --nproc-per-node 1"
step torch-w1-enable 60 env DETCOLL_NCCL_LIB="$G/libdetcoll-nccl.so" $TR python/tests/gpu_enable.py "$O/torch-w1-enable.json"
step torch-w1-strict 40 env LD_PRELOAD="$G/libdetcoll-nccl.so" DETCOLL_NCCL_MODE=strict $TR python/tests/gpu_strict.py
export DETCOLL_CUDA_SHARE_DEVICES=1
step verify-n2 90 "$G/detcoll" verify --backend cuda -n 2
step soak-w2 250 "$G/detcoll" soak --backend cuda -n 2 --calls 200000 --duration 230s --output "$O/soak-w2.json"
export DETCOLL="$G/detcoll"; step kill-w2 120 tools/kill-figures.sh "$O/kill" 3 2 cuda
