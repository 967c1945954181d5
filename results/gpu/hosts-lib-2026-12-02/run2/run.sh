#!/bin/bash
# Device run 2: run 1's torch across 2 hosts of 2 ranks again, NCCL given
# a host per rank (it refuses two ranks of a host on one GPU), detcoll's
# library splitting into 2 machines of 2; kills across 2 hosts of 2 ranks
# (rank 1 in Open, calls, Close), once each. Kernels: the tree's.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
. tools/gpu-checks.sh
cp .gpu/commit.txt "$O/"
export DETCOLL_CACHE_DIR=/tmp/dc-kernel-cache
check_torch_hosts 2 2
K="--backend cuda -n 4 --max-bytes 1MiB --duration 8s"
for during in open call close; do
	after=
	case $during in
	open) after="--kill-rank-after 200ms" ;;
	call) after="--kill-rank-after 1s" ;;
	esac
	mps_start
	step kill-2x2-$during 40 env $NET DETCOLL_VIRTUAL_HOSTS=2 "$G/detcoll" soak $K $after --kill-during $during --output "$O/kill-2x2-$during.json"
	mps_stop
	grep -h "^kill:" "$O/kill-2x2-$during.log" | head -1 >> "$O/summary.txt"
done
check_summary
