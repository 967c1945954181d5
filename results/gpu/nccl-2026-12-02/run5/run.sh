#!/bin/bash
# Device run 5 (one H200): issue 26's changes where a GPU is: detcoll
# version, verify at W=1, and bench's new columns (p10/p90, busbw) against
# NCCL at W=1. Commit in .gpu/commit.txt.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
export DETCOLL_COMMIT=$(cat .gpu/commit.txt) DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache-$$
cp .gpu/commit.txt "$O/"
"$G/detcoll" version > "$O/version.txt" 2>&1
timeout 120 "$G/detcoll" verify --backend cuda -n 1 --sizes 4,64KiB,1MiB > "$O/verify-w1.log" 2>&1; echo "verify rc=$?" >> "$O/summary.txt"
timeout 120 "$G/detcoll" bench --backend cuda -n 1 --reference nccl --size-bytes 1KiB,1MiB,64MiB --iterations 30 --output "$O/bench-w1.json" > "$O/bench-w1.log" 2>&1; echo "bench rc=$?" >> "$O/summary.txt"
cd "$OUT" && tar czf run.tgz r && rm -rf r
