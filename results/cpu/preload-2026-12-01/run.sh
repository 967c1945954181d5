#!/bin/bash
# The cost of LD_PRELOAD=libdetcoll-nccl.so on a process that never calls
# NCCL: /bin/true started 40 times with and without it; mean wall time and
# the largest peak RSS (GNU time's %M). Usage: run.sh path/to/libdetcoll-nccl.so
set -eu
lib=${1:?the library}
for mode in plain preload; do
	env=()
	[ "$mode" = preload ] && env=(LD_PRELOAD="$lib")
	start=$(date +%s%N)
	for i in $(seq 40); do env "${env[@]}" /bin/true; done
	end=$(date +%s%N)
	rss=$(for i in $(seq 5); do env "${env[@]}" /usr/bin/time -f %M /bin/true 2>&1; done | sort -n | tail -1)
	echo "$mode mean_us=$(( (end - start) / 40 / 1000 )) peak_rss_kib=$rss"
done
