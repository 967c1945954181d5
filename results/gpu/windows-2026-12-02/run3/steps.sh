# Device run 3 (one H200): the LL launches on kernels of their own
# (dc_ll_*), against run 2's where every launch ran one body, which the
# profile showed spending ~1 us in spans that do next to nothing (the
# instruction fetch of a large body, the suspect). The kernels built
# ahead of time; before (76d8933) and after in one call at W=2, 4, 8;
# the profile after at W=2; conformance at W=2, the windows, the graph
# test and verify at W=4 and 8 on the new kernels.
check_aot
mps_start
B="--backend cuda --reference none --warmup 20 --iterations 100 --operations all_reduce,all_gather --size-bytes 1KiB,64KiB,1MiB"
for w in 2 4 8; do
	step bench-w$w-before 60 "$G/before/detcoll" bench -n $w $B --output "$O/bench-w$w-before.json"
	step bench-w$w-after 60 "$G/detcoll" bench -n $w $B --output "$O/bench-w$w-after.json"
done
step prof-1k-w2 90 env DETCOLL_CUDA_PROFILE=1 "$G/detcoll" bench -n 2 --backend cuda --reference none --warmup 20 --iterations 100 --operations all_reduce --size-bytes 1KiB
step conformance-w2 150 "$G/cuda.test" -test.run 'TestConformanceGPU|TestDeviceWindowsGPU/W=(2|4)|TestDeviceGraphGPU' -test.v -test.timeout 140s
step verify-w4 90 "$G/detcoll" verify --backend cuda -n 4
step verify-w8 120 "$G/detcoll" verify --backend cuda -n 8
mps_stop
for f in "$O"/bench-*.log "$O"/prof-*.log; do echo "== $f"; grep -E "graph |pipelined|synchronised|profile" "$f"; done >> "$O/summary.txt"
