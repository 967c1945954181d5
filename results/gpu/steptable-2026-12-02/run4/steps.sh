# Device run 4 (issue 22 item 4): the push path's first copies by the copy
# engines (DETCOLL_CUDA_PUSH_COPY=engine). Bits: the conformance suite at
# W=2 (its reductions reach the push path from 2 MiB), the graph test
# (the copies captured), verify at W=2 and 8 up to 16 MiB, a soak at
# W=2; then time: bench at W=2 and W=4 with the SMs' copies and with the
# engines', in one call. All ranks on the one GPU under MPS: the engines
# copy within one GPU's memory here, not over NVLink.
export DETCOLL_CUDA_PUSH_COPY=engine
mps_start
step conformance-engine 200 "$G/cuda.test" -test.run 'TestConformanceGPU/(ReduceMatchesReference|OperatorsMatchReference|MismatchFailsEveryRank)|TestDeviceGraphGPU' -test.v -test.timeout 190s
for w in 2 8; do
	step verify-engine-w$w 120 "$G/detcoll" verify --backend cuda -n $w --sizes 4,8000,1MiB,4MiB,16MiB
done
step soak-engine-w2 45 "$G/detcoll" soak --backend cuda -n 2 --duration 20s --output "$O/soak-engine-w2.json"
B="--backend cuda --reference none --warmup 10 --iterations 30 --operations all_reduce,reduce_scatter --size-bytes 4MiB,16MiB,64MiB,256MiB"
for w in 2 4; do
	step bench-sm-w$w 120 env DETCOLL_CUDA_PUSH_COPY=sm "$G/detcoll" bench -n $w $B --output "$O/bench-sm-w$w.json"
	step bench-engine-w$w 120 "$G/detcoll" bench -n $w $B --output "$O/bench-engine-w$w.json"
done
mps_stop
