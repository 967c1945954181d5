#!/bin/bash
# Device run 1 of the rail's abort (issue 25), one H200: kills across two
# virtual hosts (NCCL on sockets, the ranks under MPS), rank 1 killed
# during calls, Close and Open, twice each, with the binary of a380fd0
# (the rail's communicators aborted one after the other) and of this
# commit (both at once); the native stacks of every process still there
# 4, 8 and 12 s into each run. Then the sum with 32-bit lanes (the lanes
# binary, its kernels compiled at Open) against this commit's kernels,
# bench in turn, and verify at W=2 for its bits.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
. tools/gpu-checks.sh
for b in . before lanes; do echo "$b: $(cat .gpu/$b/commit.txt)"; done > "$O/commit.txt"
export DETCOLL_CACHE_DIR=/tmp/dc-kernel-cache
(which gdb eu-stack; nvidia-smi -L; python3 -c 'import ctypes; v=ctypes.c_int(); ctypes.CDLL("libnccl.so.2").ncclGetVersion(ctypes.byref(v)); print("nccl", v.value)') > "$O/tools.txt" 2>&1

# stacks NAME: the stacks of the soak's processes still alive 4, 8 and
# 12 s after it starts.
stacks() {
	local name=$1 t p
	for t in 4 8 12; do
		sleep 4
		for p in $(pgrep -f "\.gpu/.*detcoll soak"); do
			{
				echo "=== +${t}s pid $p: $(tr '\0' ' ' < /proc/$p/cmdline)"
				if command -v gdb > /dev/null; then
					timeout 30 gdb -p "$p" -batch -ex "info threads" -ex "thread apply all bt 16" 2>&1 | grep -v "^\[New LWP\|^warning"
				else
					for k in /proc/$p/task/*; do echo "-- $(cat $k/comm) $(cat $k/wchan)"; cat $k/stack 2>/dev/null; done
				fi
			} >> "$O/stacks-$name.txt" 2>&1
		done
	done
}

K="--backend cuda -n 2 --max-bytes 1MiB --duration 8s"
for bin in before after; do
	BIN=$G/detcoll
	[ $bin = before ] && BIN=$G/before/detcoll
	for during in call close open; do
		for i in 1 2; do
			after=
			case $during in
			open) after="--kill-rank-after 200ms" ;;
			call) after="--kill-rank-after 1s" ;;
			esac
			name=kill-$bin-$during-$i
			mps_start
			stacks $name &
			sp=$!
			step $name 40 env $NET DETCOLL_VIRTUAL_HOSTS=2 NCCL_DEBUG=WARN "$BIN" soak $K $after --kill-during $during --output "$O/$name.json"
			wait $sp
			pkill -9 -f "\.gpu/.*detcoll soak"
			mps_stop
			grep -h "kill:\|FAIL\|PASS" "$O/$name.log" | head -3 >> "$O/summary.txt"
		done
	done
done

mps_start
B="--backend cuda --reference none --warmup 5 --iterations 20 --operations all_reduce --size-bytes 1KiB,1MiB,16MiB,256MiB"
step verify-lanes-w2 120 "$G/lanes/detcoll" verify --backend cuda -n 2
for i in 1 2; do
	for dt in bfloat16 float16 float32; do
		step bench-after-$dt-$i 30 "$G/detcoll" bench -n 2 $B --dtype $dt --output "$O/bench-after-$dt-$i.json"
		step bench-lanes-$dt-$i 30 "$G/lanes/detcoll" bench -n 2 $B --dtype $dt --output "$O/bench-lanes-$dt-$i.json"
	done
done
mps_stop
check_summary
for f in "$O"/bench-*.log; do echo "== $f"; grep -E "graph_steady" "$f"; done >> "$O/summary.txt"
