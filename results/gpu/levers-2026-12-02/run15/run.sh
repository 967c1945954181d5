#!/bin/bash
# Device run 15 (one H200): W=1 before (detcoll-before, 6adc356) and after
# (.gpu/commit.txt) in one device call: bench against NCCL in all three
# modes, NCCL called natively (nccl_direct.cu) and PyTorch symmetric
# memory as references, and the kernels' own durations (ncu).
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
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
SIZES=1KiB,4KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB,256MiB
NCU="ncu --metrics gpu__time_duration.sum --kernel-name regex:dc_ --launch-skip 200 --launch-count 30 --csv"
step ncu-before 90 $NCU "$G/cuda-before.test" -test.run '^$' -test.bench '^BenchmarkHostPathGPU$' -test.benchtime 400x
step ncu-after 90 $NCU "$G/cuda.test" -test.run '^$' -test.bench '^BenchmarkHostPathGPU$' -test.benchtime 400x
step hostpath 60 bash -c "$G/cuda-before.test -test.run '^$' -test.bench HostPathGPU -test.benchtime 20000x -test.count 3; echo AFTER; $G/cuda.test -test.run '^$' -test.bench HostPathGPU -test.benchtime 20000x -test.count 3"
for i in 1 2; do
	step bench-before-$i 90 "$G/detcoll-before" bench --backend cuda -n 1 --size-bytes $SIZES --iterations 30 --output "$O/bench-before-$i.json"
	step bench-after-$i 90 "$G/detcoll" bench --backend cuda -n 1 --size-bytes $SIZES --iterations 30 --output "$O/bench-after-$i.json"
done
step nvcc 60 nvcc -O2 -o "$O/nccl_direct" "$G/nccl_direct.cu" -lnccl
step nccl-direct-w1 60 env RANK=0 WORLD=1 "$O/nccl_direct" "$O/ncclid" "$O/nccl-direct-w1.json"
rm -f "$O/nccl_direct" "$O/ncclid"
step symm-w1 90 python3 tools/symm_mem.py -n 1 --sizes $SIZES --iterations 30 --output "$O/symm-w1.json"
