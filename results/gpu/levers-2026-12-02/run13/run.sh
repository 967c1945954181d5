#!/bin/bash
# Device run 13 (one H200): the cross-host code after a101a92 (never run on a
# GPU before), then where the W=1 kernel's time goes (nsys, if present).
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
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
(ls /usr/local/cuda/bin; which ncu nsys; nvidia-smi) > "$O/tools.log" 2>&1
VH="env $NET DETCOLL_VIRTUAL_HOSTS=2"
step treesum 60 "$G/cuda.test" -test.run '^TestTreeSumGPU$' -test.v
step verify-hosts 90 env $NET "$G/detcoll" verify --backend cuda --hosts 2 -n 2 --sizes 4,64KiB,1MiB
step soak-hosts 50 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 30s --max-bytes 1MiB --output "$O/soak-hosts.json"
for i in 1 2; do
	step kill-call-$i 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --output "$O/kill-call-$i.json"
done
step kill-call-rank0 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --kill-rank 0 --output "$O/kill-call-rank0.json"
for i in 1 2; do
	step kill-open-$i 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during open --kill-rank-after 200ms --output "$O/kill-open-$i.json"
done
step kill-close 25 $VH "$G/detcoll" soak --backend cuda -n 2 --duration 5s --max-bytes 1MiB --kill-during close --output "$O/kill-close.json"
step verify-4hosts 120 env $NET "$G/detcoll" verify --backend cuda --hosts 4 -n 4 --sizes 4,64KiB
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$NSYS" ]; then
	step nsys-w1 120 "$NSYS" profile -o "$O/w1" --force-overwrite true --stats=true "$G/cuda.test" -test.run '^$' -test.bench '^BenchmarkHostPathGPU$' -test.benchtime 4000x
	rm -f "$O"/w1.nsys-rep "$O"/w1.sqlite
fi
