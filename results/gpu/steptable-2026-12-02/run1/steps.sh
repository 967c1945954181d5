# Device run 1 of issue 24's step table (one H200): the kernels built
# ahead of time from the new source (into $O/aot for the repository, and
# the kernel cache for the steps after); the conformance suite at W=1;
# verify at W=2, 4, 8 under MPS and across virtual hosts; detcoll bench
# before (ad4090f: flags and modes) and after (the step table) at W=1 and
# W=2, all_reduce, bf16, in one call.
check_aot
step conformance-w1 150 "$G/cuda.test" -test.run 'TestConformanceGPU' -test.v -test.timeout 140s
check_verify 2 4 8
check_hosts
B="--backend cuda --reference none --warmup 10 --iterations 50 --operations all_reduce,reduce_scatter,all_gather --size-bytes 1KiB,1MiB,64MiB"
step bench-w1-before 90 "$G/before/detcoll" bench -n 1 $B --output "$O/bench-w1-before.json"
step bench-w1-after 90 "$G/detcoll" bench -n 1 $B --output "$O/bench-w1-after.json"
mps_start
step bench-w2-before 90 "$G/before/detcoll" bench -n 2 $B --output "$O/bench-w2-before.json"
step bench-w2-after 90 "$G/detcoll" bench -n 2 $B --output "$O/bench-w2-after.json"
mps_stop
for f in "$O"/bench-*.log; do echo "== $f"; tail -14 "$f"; done >> "$O/summary.txt"
