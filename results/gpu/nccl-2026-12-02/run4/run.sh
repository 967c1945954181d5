#!/bin/bash
# Device run 4 of issue 21 (one H200): the cuda backend's GPU suite and
# verify after this changes to it (the buffer's size written once,
# bufferLayout; the driver's cuStreamGetCaptureInfo), at W=1 and W=2
# time-sliced. Commit in .gpu/commit.txt.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export DETCOLL_REQUIRE_GPU=1 DETCOLL_COMMIT=$(cat .gpu/commit.txt) DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache-$$
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
step driver 120 "$G/driver.test" -test.count=1 -test.short -test.timeout 115s
step suite 240 "$G/cuda.test" -test.count=1 -test.short -test.run 'TestConformanceGPU|TestDeviceBadInputGPU|TestDeviceGraphGPU|TestSeqStartsAtRandomGPU' -test.timeout 235s
step verify-w1 90 "$G/detcoll" verify --backend cuda -n 1
step verify-w2 120 env DETCOLL_CUDA_SHARE_DEVICES=1 "$G/detcoll" verify --backend cuda -n 2 --sizes 4,64KiB,1MiB
