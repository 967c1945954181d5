#!/bin/bash
# Device run 11 (one H200), after run 10's findings (the survivor of a
# kill blamed itself; ncclCommAbort not returning left survivors waiting;
# NCCL's memory counted as a leak): two virtual hosts of one rank on the
# one GPU, NCCL on its socket transport; a short soak, then kills.
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
step soak-hosts 40 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 15s --max-bytes 1MiB --output "$O/soak-hosts.json"
for i in 1 2 3; do
	step kill-call-$i 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --output "$O/kill-call-$i.json"
done
for i in 1 2; do
	step kill-call-rank0-$i 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --kill-rank 0 --output "$O/kill-call-rank0-$i.json"
	step kill-open-$i 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during open --kill-rank-after 200ms --output "$O/kill-open-$i.json"
done
