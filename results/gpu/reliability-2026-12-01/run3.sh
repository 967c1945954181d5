#!/bin/bash
# Device run 3 (the run tool's command, from the repository root): TestDeviceTwoCommsGPU twice,
# on a cold kernel cache, then warm.
export DETCOLL_REQUIRE_GPU=1 DETCOLL_CACHE_DIR=/tmp/dc-cache
gunzip -c .gpu/a-root.test.gz > /tmp/a-root.test && chmod +x /tmp/a-root.test
date -u | tee $OUT/twocomms.log
for i in 1 2; do
  s=$(date +%s)
  timeout 140 /tmp/a-root.test -test.v -test.timeout 135s -test.run 'TestDeviceTwoCommsGPU' >> $OUT/twocomms.log 2>&1
  echo "try $i rc=$? $(( $(date +%s) - s ))s" | tee -a $OUT/twocomms.log
done
