#!/bin/bash
# Device run 16 (one H200), commit in .gpu/commit.txt: W=1 without the
# protocol's costs (run_alone, every resident block, no broadcast launch)
# against 4fb2a77 (the one-pass path of run 15); the rail connected in Open
# and Close meeting along it, under kills across 2 virtual hosts.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export DETCOLL_REQUIRE_GPU=1
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
step suite 150 "$G/cuda.test" -test.count=1 -test.short -test.run 'TestConformanceGPU|TestDeviceBadInputGPU|TestDeviceGraphGPU|TestSeqStartsAtRandomGPU|TestTreeSumGPU' -test.timeout 145s -test.v
step verify-w1 60 "$G/detcoll" verify --backend cuda -n 1
step memcheck-w1 90 compute-sanitizer --tool memcheck "$G/cuda.test" -test.count=1 -test.short -test.run 'TestConformanceGPU/.*/W=1$|TestDeviceGraphGPU/W=1$' -test.timeout 85s
VH="env $NET DETCOLL_VIRTUAL_HOSTS=2"
step verify-hosts 90 env $NET "$G/detcoll" verify --backend cuda --hosts 2 -n 2 --sizes 4,64KiB,1MiB
step soak-hosts 35 $VH DETCOLL_COMMIT=$C "$G/detcoll" soak --backend cuda -n 2 --duration 20s --max-bytes 1MiB --output "$O/soak-hosts.json"
for i in 1 2 3; do
	step kill-open-$i 25 $VH DETCOLL_COMMIT=$C "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during open --kill-rank-after 200ms --output "$O/kill-open-$i.json"
done
step kill-open-early 25 $VH DETCOLL_COMMIT=$C "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during open --kill-rank-after 50ms --output "$O/kill-open-early.json"
step kill-call 25 $VH DETCOLL_COMMIT=$C "$G/detcoll" soak --backend cuda -n 2 --duration 10s --max-bytes 1MiB --kill-during call --output "$O/kill-call.json"
step kill-close 25 $VH DETCOLL_COMMIT=$C "$G/detcoll" soak --backend cuda -n 2 --duration 5s --max-bytes 1MiB --kill-during close --output "$O/kill-close.json"
SIZES=1KiB,64KiB,1MiB,16MiB,256MiB
for i in 1 2; do
	step bench-4fb2a77-$i 60 env DETCOLL_COMMIT=4fb2a77 "$G/detcoll-4fb2a77" bench --backend cuda -n 1 --size-bytes $SIZES --iterations 30 --output "$O/bench-4fb2a77-$i.json"
	step bench-after-$i 60 env DETCOLL_COMMIT=$C "$G/detcoll" bench --backend cuda -n 1 --size-bytes $SIZES --iterations 30 --output "$O/bench-after-$i.json"
done
step ncu-after 60 ncu --metrics gpu__time_duration.sum --kernel-name regex:dc_ --launch-skip 200 --launch-count 30 --csv "$G/cuda.test" -test.run '^$' -test.bench '^BenchmarkHostPathGPU$' -test.benchtime 400x
