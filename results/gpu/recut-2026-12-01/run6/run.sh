#!/bin/bash
# Device run 6 (one H200): after the last re-cut commits (the root's one
# openBackend, base.CheckRequest, the shim's one prologue), the cuda
# backend's verify at W=1 and W=2 (time-sliced) and the library under torch
# at W=1, lazily initialised.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export PYTHONUNBUFFERED=1 DETCOLL_NCCL_DEBUG=1
start=$(date +%s)
log() { echo "$(date +%T) +$(( $(date +%s) - start ))s $*" | tee -a "$O/summary.txt"; }
step() {
	local name=$1 t=$2; shift 2
	local s=$(date +%s)
	timeout "$t" "$@" > "$O/$name.log" 2>&1
	log "$name rc=$? $(( $(date +%s) - s ))s"
}
finish() { log done; cd "$OUT" && tar czf run.tgz r && rm -rf r; }
trap finish EXIT
cp .gpu/commit.txt "$O/"
step verify-w1 40 "$G/detcoll" verify --backend cuda -n 1
step verify-w2 60 env DETCOLL_CUDA_SHARE_DEVICES=1 "$G/detcoll" verify --backend cuda -n 2
TR="python3 -m torch.distributed.run --standalone --nproc-per-node 1"
step torch-lazy 60 env LD_PRELOAD="$G/libdetcoll-nccl.so" DETCOLL_CAPACITY=8MiB CHUNK_ELEMENTS=5000000 $TR python/tests/gpu_torch.py "$O/torch-lazy.json"
