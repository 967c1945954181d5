# Device run 2 of lever 0 (one H200): the kernels built ahead of time for
# 72cdcc7 (the registered reduce-scatter's primitive moved DC_S_LL and
# DC_S_ALONE); the registered reduce-scatter's and the cuMemCreate windows'
# GPU tests under MPS (W=2, 3, 4, 8), the driver's cuMemCreate export and
# import, graphs; then the LL launch with a thread per line (72cdcc7)
# against 512 threads (nollt: 72cdcc7 with 26dbe8f reverted), same kernel
# source, all-reduce of 1 KiB and 64 KiB at W=2 (twice, alternating), 4
# and 8; the registered reduce-scatter against the push path (the same
# binary with and without --registered) at W=2, 4 and 8; verify at W=8
# and a soak at W=2, as time allows. check_aot fills the kernel cache the
# later steps read.
check_aot
mps_start
step driver-shareable-mps 60 "$G/driver.test" -test.run '^TestGPUMemShareable$' -test.v
step windows 240 "$G/cuda.test" -test.run '^TestDeviceWindows(CuMem)?GPU$' -test.v -test.timeout 230s
step graph 90 "$G/cuda.test" -test.run '^TestDeviceGraphGPU$' -test.v -test.timeout 80s
B="--backend cuda --reference none --warmup 10 --iterations 60 --operations all_reduce --size-bytes 1KiB,64KiB --timeout 5m"
for w in 2 4 8; do
	for i in $( [ $w = 2 ] && echo 1 2 || echo 1); do
		step bench-w$w-nollt-$i 60 "$G/nollt/detcoll" bench -n $w $B --output "$O/bench-w$w-nollt-$i.json"
		step bench-w$w-after-$i 60 "$G/detcoll" bench -n $w $B --output "$O/bench-w$w-after-$i.json"
	done
done
R="--backend cuda --reference none --warmup 10 --iterations 30 --operations reduce_scatter --size-bytes 4MiB,16MiB,64MiB,256MiB"
for w in 2 4 8; do
	step bench-push-rs-w$w 60 "$G/detcoll" bench -n $w $R --output "$O/bench-push-rs-w$w.json"
	step bench-reg-rs-w$w 60 "$G/detcoll" bench -n $w $R --registered --output "$O/bench-reg-rs-w$w.json"
done
step verify-w8 100 "$G/detcoll" verify --backend cuda -n 8
step soak-w2 40 "$G/detcoll" soak --backend cuda -n 2 --duration 20s --output "$O/soak-w2.json"
mps_stop
for f in "$O"/bench-*.log "$O"/windows.log "$O"/graph.log "$O"/driver-*.log "$O"/verify-*.log "$O"/soak-*.log; do echo "== $f"; grep -E "graph|pipelined|synchronised|^(---|ok|PASS|FAIL)|panic" "$f" | head -40; done >> "$O/summary.txt"
