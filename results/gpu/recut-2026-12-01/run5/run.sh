#!/bin/bash
# Device run 5 (one H200): the final libdetcoll-nccl under torch at W=1,
# lazily and eagerly initialised (new_group then splits the communicator),
# put in place by enable(), and in strict mode; DETCOLL_NCCL_DEBUG=1 says
# how each communicator's setup ended.
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
TR="python3 -m torch.distributed.run --standalone --nproc-per-node 1"
step torch-lazy 90 env LD_PRELOAD="$G/libdetcoll-nccl.so" DETCOLL_CAPACITY=8MiB CHUNK_ELEMENTS=5000000 $TR python/tests/gpu_torch.py "$O/torch-lazy.json"
step torch-eager 90 env LD_PRELOAD="$G/libdetcoll-nccl.so" GPU_TORCH_EAGER=1 $TR python/tests/gpu_torch.py "$O/torch-eager.json"
step torch-enable 90 env DETCOLL_NCCL_LIB="$G/libdetcoll-nccl.so" $TR python/tests/gpu_enable.py "$O/torch-enable.json"
step torch-strict 40 env LD_PRELOAD="$G/libdetcoll-nccl.so" DETCOLL_NCCL_MODE=strict $TR python/tests/gpu_strict.py
