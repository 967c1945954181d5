#!/bin/bash
# Device run 12 (one H200): run 11 without the lock that hung its survivors; kills only.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
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
for i in 1 2; do
	step kill-call-$i 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --output "$O/kill-call-$i.json"
done
step kill-call-rank0 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --kill-rank 0 --output "$O/kill-call-rank0.json"
step kill-open 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during open --kill-rank-after 200ms --output "$O/kill-open.json"
