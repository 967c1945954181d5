#!/bin/bash
# Device run 19 (one H200): detcoll's kills across two virtual hosts after
# the abort got its 10 s and a failed Close its bounded wait for the device.
# The bound is 5 s here: NCCL's abort alone takes up to 2.2 s (run 18).
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
C=$(cat .gpu/commit.txt)
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1"
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
VH="env $NET DETCOLL_VIRTUAL_HOSTS=2 DETCOLL_COMMIT=$C"
K="--backend cuda -n 2 --max-bytes 1MiB --kill-bound 5s"
for i in 1 2; do step kill-close-$i 30 $VH "$G/detcoll" soak $K --duration 3s --kill-during close --output "$O/kill-close-$i.json"; done
for i in 1 2; do step kill-call-$i 30 $VH "$G/detcoll" soak $K --duration 10s --kill-during call --kill-rank-after 1s --output "$O/kill-call-$i.json"; done
step kill-open 30 $VH "$G/detcoll" soak $K --duration 10s --kill-during open --kill-rank-after 200ms --output "$O/kill-open.json"
step kill-call-rank0 30 $VH "$G/detcoll" soak $K --duration 10s --kill-during call --kill-rank 0 --kill-rank-after 1s --output "$O/kill-call-rank0.json"
