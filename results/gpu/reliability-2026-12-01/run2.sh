#!/bin/bash
# Device run 2 (run from the repository root, with .gpu/bins.tgz holding the binaries built here):
# TwoComms before the fix, then the whole GPU suite after every fix. Run 1 was the same script with
# the before-runs of every new test first and without the sanitizer and the wider worlds.
set -u
T0=$(date +%s)
mkdir -p /tmp/b && tar xzf .gpu/bins.tgz -C /tmp/b
B=/tmp/b
export DETCOLL_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 DETCOLL_CACHE_DIR=/tmp/detcoll-cache
S=$OUT/summary.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,name --format=csv,noheader; } > $S 2>&1
step() { # name timeout log cmd...
  local name=$1 to=$2 log=$3; shift 3
  local t=$(date +%s)
  echo "=== $name: $*" >> $log
  timeout $to "$@" >> $log 2>&1
  local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - t ))s (at +$(( $(date +%s) - T0 ))s)" | tee -a $S
}
NEW='TestDeviceNaNCanonicalGPU|TestDeviceTwoCommsGPU|TestDeviceCloseWaitsForPeersGPU|TestDeviceBarrierDuringCaptureGPU'
step before-twocomms 90 $OUT/before.log $B/b-root.test -test.v -test.timeout 85s -test.run 'TestDeviceTwoCommsGPU'
step after-new 120 $OUT/after-new.log $B/a-root.test -test.v -test.timeout 115s -test.run "$NEW"
step suite 200 $OUT/after-suite.log $B/a-root.test -test.v -test.timeout 195s -test.run 'TestDevice(BadInput|Mismatch|SkippedCallTimesOut|KilledRank|Abort|Graph|Reduce|Gather)GPU'
step cuda-pkg 40 $OUT/after-misc.log $B/a-cuda.test -test.v
step driver-pkg 60 $OUT/after-misc.log $B/a-driver.test -test.v
step verify-n1 60 $OUT/verify.log $B/detcoll verify --backend cuda -n 1 --timeout 60s
step verify-n2-shared 80 $OUT/verify.log env DETCOLL_CUDA_SHARE_DEVICES=1 $B/detcoll verify --backend cuda -n 2 --timeout 60s
step memcheck 90 $OUT/sanitizer.log compute-sanitizer --tool memcheck --target-processes all --error-exitcode 9 $B/a-root.test -test.v -test.short -test.run 'TestDeviceNaNCanonicalGPU|TestDeviceReduceGPU/W=1'
LEFT=$(( 560 - ($(date +%s) - T0) ))
step wider $LEFT $OUT/after-wider.log $B/a-root.test -test.v -test.timeout $(( LEFT - 5 ))s -test.run 'TestDeviceWiderWorldsGPU'
grep -hE "^(--- |ok|FAIL|PASS)|ERROR SUMMARY" $OUT/*.log | sort | uniq -c | sort -rn | head -60 >> $S
echo "total $(( $(date +%s) - T0 ))s" >> $S
