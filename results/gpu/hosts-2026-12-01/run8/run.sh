#!/bin/bash
# Device run 8 (one H200): the cuda backend across hosts (issue 13) as two
# virtual hosts of one rank each on the one GPU, NCCL on its socket
# transport over loopback (package nccl gives each virtual host its own
# NCCL_HOSTID); treesum.cu against the reference; the kernels after the
# ops.h split at W=1. Part "a" or "b" (one device call each).
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export PYTHONUNBUFFERED=1 DETCOLL_REQUIRE_GPU=1
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
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
case ${1:-a} in
a)
	step treesum 60 "$G/cuda.test" -test.run 'TreeSumGPU' -test.v
	step verify-w1 60 "$G/detcoll" verify --backend cuda -n 1
	step verify-hosts 240 env NCCL_DEBUG=WARN "$G/detcoll" verify --backend cuda --hosts 2 -n 2 --sizes 4,8000,64KiB,1MiB
	;;
b)
	step soak-hosts 90 env DETCOLL_VIRTUAL_HOSTS=2 "$G/detcoll" soak --backend cuda -n 2 --duration 45s --max-bytes 1MiB --output "$O/soak-hosts.json"
	for i in 1 2 3; do
		step kill-call-$i 60 env DETCOLL_VIRTUAL_HOSTS=2 "$G/detcoll" soak --backend cuda -n 2 --duration 20s --max-bytes 1MiB --kill-during call --output "$O/kill-call-$i.json"
	done
	step kill-rank0 60 env DETCOLL_VIRTUAL_HOSTS=2 "$G/detcoll" soak --backend cuda -n 2 --duration 20s --max-bytes 1MiB --kill-during call --kill-rank 0 --output "$O/kill-rank0.json"
	step bench-hosts 200 "$G/detcoll" bench --backend cuda --hosts 2 -n 2 --operations all_reduce,all_gather,reduce_scatter --size-bytes 4KiB,64KiB,1MiB,16MiB --warmup 3 --iterations 20 --output "$O/bench-hosts.json"
	;;
esac
