# Device run 1 of lever 0 at W >= 2 (one H200, ranks under MPS): the LL
# launch's hot path made compact (mid: b6c6712, cold code out of line) and
# then started with a thread per line (after: 26dbe8f), against before
# (b4d909c), in one call; the floors (ll_floor.cu, mps_floor.cu) beside
# them; the profile of an LL launch before and after; the SASS of the W=2
# LL kernel before and after (its size, the instruction fetch suspect).
# The binaries read the kernels built ahead of time from the carried tree
# (b4d909c's): mid and after compile theirs with NVRTC, each into a cache
# of its own.
step build-floors 120 bash -c "nvcc -O2 -arch=sm_90 -o $O/ll_floor tools/perf/ll_floor.cu && nvcc -O2 -arch=sm_90 -o $O/mps_floor .gpu/mps_floor.cu"
mps_start
pair ll-floor "$O/ll_floor"
pair mps-floor "$O/mps_floor"
B="--backend cuda --reference none --warmup 10 --iterations 60 --operations all_reduce --size-bytes 1KiB,64KiB --timeout 5m"
bin() { [ "$1" = after ] && echo "$G/detcoll" || echo "$G/$1/detcoll"; }
for v in before mid after; do
	step bench-w2-$v 90 env DETCOLL_CACHE_DIR=/tmp/cache-$v "$(bin $v)" bench -n 2 $B --output "$O/bench-w2-$v.json"
done
for v in before after; do
	step prof-w2-$v 90 env DETCOLL_CACHE_DIR=/tmp/cache-prof-$v DETCOLL_CUDA_PROFILE=1 "$(bin $v)" bench -n 2 $B --size-bytes 1KiB
done
mps_stop
gunzip -c internal/backend/cuda/aot/sm_90-w2.gz > /tmp/before-w2.cubin
for f in /tmp/cache-after/*.cubin; do tail -c +50 "$f" > /tmp/after-w2.cubin; done
for v in before after; do
	cuobjdump -sass /tmp/$v-w2.cubin > "$O/sass-w2-$v.txt" 2>&1
	for k in dc_ll_sum_bf16 dc_sum_bf16; do
		echo "$v $k: $(cuobjdump -sass -fun $k /tmp/$v-w2.cubin | grep -cE '^\s+/\*[0-9a-f]{4}\*/') instructions" >> "$O/summary.txt"
	done
done
gzip -9 "$O"/sass-*.txt
mps_start
for w in 4 8; do
	for v in before after; do
		step bench-w$w-$v 120 env DETCOLL_CACHE_DIR=/tmp/cache-$v "$(bin $v)" bench -n $w $B --output "$O/bench-w$w-$v.json"
	done
done
step prof-w8-after 120 env DETCOLL_CACHE_DIR=/tmp/cache-prof-after DETCOLL_CUDA_PROFILE=1 "$G/detcoll" bench -n 8 $B --size-bytes 1KiB
mps_stop
for f in "$O"/bench-*.log "$O"/prof-*.log; do echo "== $f"; grep -E "graph|pipelined|synchronised|profile|span|rank" "$f" | head -30; done >> "$O/summary.txt"
