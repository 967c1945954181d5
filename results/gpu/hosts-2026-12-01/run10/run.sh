#!/bin/bash
# Device run 10 (one H200), after the fixes of run 9's failures: the cuda backend across two virtual hosts (one
# rank each, both on the one GPU, NCCL's socket transport over loopback):
# a soak, kills of either rank during the calls and during Open, bench
# against NCCL's own collectives in the same configuration; then, at W=1,
# the host path (BenchmarkHostPathGPU) and the calibration of bench's NCCL
# column against NCCL called natively (nccl_direct.cu), and the PyTorch
# symmetric-memory reference (tools/symm_mem.py).
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export PYTHONUNBUFFERED=1 DETCOLL_REQUIRE_GPU=1
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1"
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
VH="env $NET DETCOLL_VIRTUAL_HOSTS=2"
step soak-hosts 60 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 30s --max-bytes 1MiB --output "$O/soak-hosts.json"
for i in 1 2 3 4 5; do
	step kill-call-$i 40 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --output "$O/kill-call-$i.json"
done
step kill-call-rank0 40 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --kill-rank 0 --output "$O/kill-call-rank0.json"
for i in 1 2; do step kill-open-$i 40 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during open --kill-rank-after 200ms --output "$O/kill-open-$i.json"; done
step bench-hosts 150 env $NET "$G/detcoll" bench --backend cuda --hosts 2 -n 2 --operations all_reduce,all_gather,reduce_scatter --size-bytes 4KiB,1MiB,16MiB --warmup 2 --iterations 8 --output "$O/bench-hosts.json"
step verify-hosts 120 env $NET "$G/detcoll" verify --backend cuda --hosts 2 -n 2 --sizes 4,64KiB,1MiB
