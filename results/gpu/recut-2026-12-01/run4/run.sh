#!/bin/bash
# Device run 4 (one H200): where libdetcoll-nccl's latency under torch at
# W=1 goes: a C program's ncclAllReduce with the real NCCL and with the
# library (host cost of the call, and synchronised), GC off as a control;
# then torch's latency script again, twice each way.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
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
step build 60 gcc -O2 -I/usr/local/cuda/include cmd/libdetcoll-nccl/testdata/latency.c -L/usr/local/cuda/lib64 -lcudart -lnccl -o "$O/latency"
step c-nccl 60 "$O/latency"
step c-detcoll 60 env LD_PRELOAD="$G/libdetcoll-nccl.so" "$O/latency"
step c-detcoll-gcoff 60 env LD_PRELOAD="$G/libdetcoll-nccl.so" GOGC=off "$O/latency"
TR="python3 -m torch.distributed.run --standalone --nproc-per-node 1"
for i in 1 2; do
	step torch-nccl-$i 60 $TR python/tests/gpu_latency.py "$O/torch-nccl-$i.json" nccl
	step torch-detcoll-$i 60 env LD_PRELOAD="$G/libdetcoll-nccl.so" $TR python/tests/gpu_latency.py "$O/torch-detcoll-$i.json" detcoll
done
rm -f "$O/latency"
