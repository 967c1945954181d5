# Device run 1 of issue 22's registered all-reduce (one H200): the kernels
# built ahead of time from the new source (REDUCE_REG); the windows test
# at W=2, 3, 4, 8 and the conformance reductions and graph test at W=2
# (the push path's kernels changed too) under MPS; detcoll bench, all_reduce
# bf16, with and without -registered at W=2, 4, 8 in one call; the copy
# engines' soak again (their misaligned fall-back); the floors of lever 0
# (mps_floor.cu) beside a W=2 1 KiB all-reduce.
check_aot
mps_start
step windows 300 "$G/cuda.test" -test.run 'TestDeviceWindowsGPU|TestConformanceGPU/ReduceMatchesReference|TestDeviceGraphGPU' -test.v -test.timeout 290s
B="--backend cuda --reference none --warmup 10 --iterations 30 --operations all_reduce --size-bytes 4MiB,16MiB,64MiB,256MiB"
for w in 2 4 8; do
	step bench-push-w$w 120 "$G/detcoll" bench -n $w $B --output "$O/bench-push-w$w.json"
	step bench-reg-w$w 120 "$G/detcoll" bench -n $w $B --registered --output "$O/bench-reg-w$w.json"
done
step soak-engine-w2 40 env DETCOLL_CUDA_PUSH_COPY=engine "$G/detcoll" soak --backend cuda -n 2 --duration 15s --output "$O/soak-engine-w2.json"
step build-floor 90 nvcc -O2 -arch=sm_90 -o "$O/mps_floor" .gpu/mps_floor.cu
pair mps-floor "$O/mps_floor"
step bench-1k-w2 60 "$G/detcoll" bench -n 2 --backend cuda --reference none --warmup 20 --iterations 100 --operations all_reduce --size-bytes 1KiB --output "$O/bench-1k-w2.json"
mps_stop
for f in "$O"/bench-*.log "$O"/mps-floor*.log; do echo "== $f"; tail -14 "$f"; done >> "$O/summary.txt"
