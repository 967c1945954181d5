# Device run 2 of issue 24's step table (one H200): the conformance suite
# with ranks sharing the GPU under MPS (W=2; reductions and gathers at W=3,
# 4 and 8; two and four communicators on unordered streams), from the
# kernels built ahead of time in run 1 (now in the carried tree).
mps_start
step conformance-shared 560 "$G/cuda.test" -test.run 'TestConformanceGPU|TestDeviceWiderWorldsGPU|TestDeviceTwoCommsGPU|TestDeviceFourCommsGPU' -test.v -test.timeout 555s
mps_stop
grep -E "^(--- |    --- |ok|FAIL|PASS|panic)" "$O/conformance-shared.log" | tail -60 >> "$O/summary.txt"
