#!/bin/bash
# Device run 1 of the sum's cost (issue 23), one H200: the kernels built
# ahead of time from 43fc70d (dc_sum_* beside dc_reduce); the registers
# and spills of sm_90 W=2's kernels before the operators (3f4041b), as
# shipped (82e28c0) and now; under MPS, bench of the bf16 all-reduce sum
# before (3f4041b) and after, twice in turn, and of f32 and max after; the
# conformance suite at W=1 and 2 with the graph and T-over-hosts cases;
# torch's reductions and an FSDP2 step under libdetcoll-nccl at W=2; every
# operator at W=4 and 8 (conformance, verify, soak); verify over 2 hosts
# of 2 ranks (the rails' device ordinal, fixed in 989cbfc).
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
. tools/gpu-checks.sh
cp .gpu/commit.txt "$O/"
export DETCOLL_CACHE_DIR=/tmp/dc-kernel-cache SOAK_DURATION=10s
step aot 140 "$G/aot" -out "$O/aot" -cache
ls -la "$O/aot" >> "$O/summary.txt"
gunzip -c "$O/aot/sm_90-w2.gz" > /tmp/after.cubin
for v in before shipped; do echo "== $v"; cuobjdump -res-usage "$G/res/$v-sm_90-w2.cubin"; done > "$O/res-usage.log" 2>&1
(echo "== after"; cuobjdump -res-usage /tmp/after.cubin) >> "$O/res-usage.log" 2>&1
grep -A1 "Function dc_" "$O/res-usage.log" | grep -v "^--" >> "$O/summary.txt"
mps_start
B="--backend cuda --reference none --warmup 5 --iterations 20 --operations all_reduce --size-bytes 1KiB,1MiB,16MiB,256MiB"
for i in 1 2; do
	step bench-before-w2-$i 25 env DETCOLL_COMMIT=3f4041b "$G/before/detcoll" bench -n 2 $B --output "$O/bench-before-w2-$i.json"
	step bench-after-w2-$i 25 "$G/detcoll" bench -n 2 $B --output "$O/bench-after-w2-$i.json"
done
step bench-after-f32-w2 25 "$G/detcoll" bench -n 2 $B --dtype float32 --output "$O/bench-after-f32-w2.json"
step bench-before-f32-w2 25 env DETCOLL_COMMIT=3f4041b "$G/before/detcoll" bench -n 2 $B --dtype float32 --output "$O/bench-before-f32-w2.json"
step bench-max-w2 25 "$G/detcoll" bench -n 2 $B --op max --output "$O/bench-max-w2.json"
step conformance 200 "$G/cuda.test" -test.run 'TestConformanceGPU|TestDeviceGraphGPU|TestTreeReduceGPU' -test.v -test.timeout 190s
mps_stop
check_torch
check_fsdp
check_operators 4 8
mps_start
step hosts-2x2 150 env $NET "$G/detcoll" verify --backend cuda -n 4 --hosts 2
mps_stop
check_summary
for f in "$O"/bench-*.log; do echo "== $f"; grep -E "^all_reduce|^#" "$f" | head -20; done >> "$O/summary.txt"
