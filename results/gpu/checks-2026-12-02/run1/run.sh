#!/bin/bash
# Device run 1 of 2026-12-02 (one H200): the behaviour checks of the
# layout, schedule and settings refactors of issues 24 and 25 (commits
# after c4d4595), which no GPU had run: the conformance suite at W=1,
# verify at W = 2, 4, 8 under MPS, verify across 2 and 4 virtual hosts,
# and soak with a rank killed in Open, calls and Close on one host and
# across two. Binaries: tools/gpu-build.sh detcoll cuda.test lib.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
. tools/gpu-checks.sh
cp .gpu/commit.txt "$O/"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$O/gpu.txt" 2>&1
step conformance-w1 150 "$G/cuda.test" -test.run 'TestConformanceGPU' -test.v -test.timeout 140s
check_verify 2 4 8
check_hosts
check_kills
check_summary
