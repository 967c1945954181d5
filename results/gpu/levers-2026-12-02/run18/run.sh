#!/bin/bash
# Device run 18 (one H200): run 17's NCCL-only kill, now shaped like
# detcoll's rail (two communicators, the data's all-gathers pipelined), to
# find which difference leaves ncclCommAbort stuck; and one detcoll kill in
# Close with NCCL's warnings on.
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
step nvcc 90 nvcc -O2 -std=c++17 -o "$O/nccl_abort" results/gpu/levers-2026-12-02/run18/nccl_abort.cu -lnccl -lpthread
pair() { # mode pipe
	local id=$O/id.$RANDOM
	env $NET NCCL_HOSTID=vh1 RANK=1 MODE=$1 PIPE=$2 KILL_MS=300 "$O/nccl_abort" $id > /dev/null 2>&1 &
	env $NET NCCL_HOSTID=vh0 RANK=0 MODE=$1 PIPE=$2 KILL_MS=300 "$O/nccl_abort" $id
	local rc=$?
	wait
	rm -f $id $id.kill
	return $rc
}
for v in "two 1" "two 64" "blocking 64"; do
	set -- $v
	for i in 1 2; do step nccl-$1-pipe$2-$i 25 bash -c "$(declare -f pair); O=$O NET='$NET'; pair $1 $2"; done
done
rm -f "$O/nccl_abort"
step kill-close-warn 25 env $NET NCCL_DEBUG=WARN DETCOLL_VIRTUAL_HOSTS=2 DETCOLL_COMMIT=$C "$G/detcoll" soak --backend cuda -n 2 --duration 3s --max-bytes 1MiB --kill-during close --output "$O/kill-close-warn.json"
