# Device run 2 (one H200): the kernels built ahead of time again (the
# profile marks changed the source, not the code); where an LL launch's
# time goes at W=2, 4 and 8 (DETCOLL_CUDA_PROFILE=1: the marks, each rank's
# means on stderr at Close) beside the same call without them; the windows
# and the W=2 reductions on the new kernels.
check_aot
mps_start
step windows-w2 120 "$G/cuda.test" -test.run 'TestDeviceWindowsGPU/W=2|TestConformanceGPU/ReduceMatchesReference/W=2' -test.v -test.timeout 110s
B="--backend cuda --reference none --warmup 20 --iterations 100 --operations all_reduce --size-bytes 1KiB"
for w in 2 4 8; do
	step bench-1k-w$w 60 "$G/detcoll" bench -n $w $B --output "$O/bench-1k-w$w.json"
	step prof-1k-w$w 90 env DETCOLL_CUDA_PROFILE=1 "$G/detcoll" bench -n $w $B --output "$O/prof-1k-w$w.json"
done
mps_stop
for f in "$O"/bench-*.log "$O"/prof-*.log; do echo "== $f"; grep -E "graph|pipelined|synchronised|profile" "$f"; done >> "$O/summary.txt"
