#!/bin/bash
# Device run 7 (one H200): the libdetcoll-nccl changes that came after run 6
# (ncclGroupSimulateEnd, nonblocking setup, first Reduce under capture) under
# torch at W=1, blocking and nonblocking communicators; verify at W=1; and
# whether NCCL takes two processes on one GPU as two hosts (NCCL_HOSTID),
# on its socket transport: the setup that issue 13's GPU runs need.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; D=results/gpu/recut-2026-12-01/run7; mkdir -p "$O"
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
TR1="python3 -m torch.distributed.run --standalone --nproc-per-node 1"
TR2="python3 -m torch.distributed.run --standalone --nproc-per-node 2"
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"
step vhost-nccl 90 env $NET $TR2 $D/vhost_nccl.py
step verify-w1 40 "$G/detcoll" verify --backend cuda -n 1
step torch-lazy 60 env LD_PRELOAD="$G/libdetcoll-nccl.so" DETCOLL_CAPACITY=8MiB CHUNK_ELEMENTS=5000000 $TR1 python/tests/gpu_torch.py "$O/torch-lazy.json"
step torch-nonblocking 60 env TORCH_NCCL_USE_COMM_NONBLOCKING=1 LD_PRELOAD="$G/libdetcoll-nccl.so" DETCOLL_CAPACITY=8MiB CHUNK_ELEMENTS=5000000 $TR1 python/tests/gpu_torch.py "$O/torch-nonblocking.json"
step torch-strict 60 env DETCOLL_NCCL_MODE=strict LD_PRELOAD="$G/libdetcoll-nccl.so" $TR1 python/tests/gpu_strict.py
