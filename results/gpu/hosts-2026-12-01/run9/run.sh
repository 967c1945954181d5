#!/bin/bash
# Device run 9 (one H200): the cuda backend across two virtual hosts (one
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
for i in 1 2 3; do
	step kill-call-$i 40 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --output "$O/kill-call-$i.json"
done
step kill-call-rank0 40 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --kill-rank 0 --output "$O/kill-call-rank0.json"
step kill-open 40 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during open --kill-rank-after 200ms --output "$O/kill-open.json"
step bench-hosts 150 env $NET "$G/detcoll" bench --backend cuda --hosts 2 -n 2 --operations all_reduce,all_gather,reduce_scatter --size-bytes 4KiB,1MiB,16MiB --warmup 2 --iterations 8 --output "$O/bench-hosts.json"
step hostpath 40 "$G/cuda.test" -test.run XXX -test.bench HostPathGPU -test.benchtime 20000x -test.count 3
step nvcc 60 nvcc -O2 -o "$O/nccl_direct" "$G/nccl_direct.cu" -lnccl
step nccl-direct-w1 60 env RANK=0 WORLD=1 "$O/nccl_direct" "$O/ncclid" "$O/nccl-direct-w1.json"
rm -f "$O/nccl_direct" "$O/ncclid"
step bench-w1 120 "$G/detcoll" bench --backend cuda -n 1 --operations all_reduce,all_gather,reduce_scatter --size-bytes 1KiB,64KiB,256KiB,1MiB,16MiB,256MiB --iterations 30 --output "$O/bench-w1.json"
step symm-w1 60 python3 tools/symm_mem.py -n 1 --sizes 1KiB,64KiB,256KiB,1MiB,16MiB,256MiB --iterations 30 --output "$O/symm-w1.json"
