#!/bin/bash
# Device run 17 (one H200): does NCCL's own ncclCommAbort return when its
# peer process is killed, two processes on one GPU as two virtual hosts
# (nccl_abort.cu, no detcoll), blocking and nonblocking communicators; and
# detcoll's kills again without the connecting in Open (reverted).
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
step nvcc 90 nvcc -O2 -std=c++17 -o "$O/nccl_abort" results/gpu/levers-2026-12-02/run17/nccl_abort.cu -lnccl -lpthread
pair() { # mode kill_ms
	local id=$O/id.$RANDOM
	env $NET NCCL_HOSTID=vh1 RANK=1 MODE=$1 KILL_MS=$2 "$O/nccl_abort" $id > /dev/null 2>&1 &
	env $NET NCCL_HOSTID=vh0 RANK=0 MODE=$1 KILL_MS=$2 "$O/nccl_abort" $id
	local rc=$?
	wait
	rm -f $id $id.kill
	return $rc
}
for m in blocking nonblocking; do
	for i in 1 2 3; do step nccl-$m-$i 25 bash -c "$(declare -f pair); O=$O NET='$NET'; pair $m 300"; done
done
rm -f "$O/nccl_abort"
VH="env $NET DETCOLL_VIRTUAL_HOSTS=2 DETCOLL_COMMIT=$C"
for i in 1 2 3; do
	step kill-call-$i 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --output "$O/kill-call-$i.json"
done
for i in 1 2; do
	step kill-close-$i 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 5s --max-bytes 1MiB --kill-during close --output "$O/kill-close-$i.json"
done
step kill-open 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during open --kill-rank-after 200ms --output "$O/kill-open.json"
