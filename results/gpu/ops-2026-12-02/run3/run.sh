#!/bin/bash
# Device run 3 of issue 23 on the GPU (one H200): after the arithmetic in
# 32-bit words and the reduce loop's values in registers (run 2 had the
# sum 3-14% slower than before the operators): the kernels built ahead of
# time; under MPS the conformance operator, reduce, mismatch, graph and
# T-over-hosts cases at W=1 and 2; verify at W=4 (the operator rows); bench
# of the sum before (3f4041b) and after and of max after, at W=2. (libdetcoll-nccl under torch ran in nccl-ops-2026-12-02.)
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
. tools/gpu-checks.sh
cp .gpu/commit.txt "$O/"
export DETCOLL_CACHE_DIR=/tmp/dc-kernel-cache
step aot 140 "$G/aot" -out "$O/aot" -cache
ls -la "$O/aot" >> "$O/summary.txt"
mps_start
B="--backend cuda --reference none --warmup 5 --iterations 20 --operations all_reduce --size-bytes 1KiB,1MiB,16MiB,256MiB"
step bench-before-w2 25 env DETCOLL_COMMIT=3f4041b "$G/before/detcoll" bench -n 2 $B --output "$O/bench-before-w2.json"
step bench-after-w2 25 "$G/detcoll" bench -n 2 $B --output "$O/bench-after-w2.json"
step bench-max-w2 20 "$G/detcoll" bench -n 2 $B --op max --output "$O/bench-max-w2.json"
step conformance 80 "$G/cuda.test" -test.run 'TestConformanceGPU/(OperatorsMatchReference|ReduceMatchesReference|MismatchFailsEveryRank)|TestDeviceGraphGPU|TestTreeReduceGPU' -test.v -test.timeout 75s
step verify-w4 45 "$G/detcoll" verify --backend cuda -n 4
# An FSDP2 step under libdetcoll-nccl, W=2 as two NCCL hosts on the GPU.
LIB=$G/libdetcoll-nccl.so
TORCH_NCCL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))')
HOSTS=$O/hosts.sh
printf '#!/bin/bash\nexport NCCL_HOSTID=detcoll-vhost-$RANK\nexec "$@"\n' > "$HOSTS"; chmod +x "$HOSTS"
step fsdp-w2 60 env LD_PRELOAD=$LIB DETCOLL_NCCL_LIB=$LIB DETCOLL_REAL_NCCL=$TORCH_NCCL DETCOLL_NCCL_REPORT=$O/report-fsdp-w2.json $NET torchrun --standalone --nproc-per-node 2 --no-python $HOSTS python3 python/tests/gpu_fsdp.py "$O/fsdp-w2.json"
grep -h "PASS\|FAIL" "$O/fsdp-w2.log" >> "$O/summary.txt"
mps_stop
check_summary
for f in "$O"/bench-*.log; do echo "== $f"; grep -E "^all_reduce|^#" "$f" | head -20; done >> "$O/summary.txt"
