#!/bin/bash
# Device run 2 of issue 21 (one H200): the host's cost per call. At W=1
# without MPS: ncclAllReduce from C (testdata/latency.c) with the real NCCL
# and with the library, the Go API's host path (profiled), torch eager with
# and without the library; at W=2 (two NCCL hosts on the one GPU, under
# MPS) torch eager with and without. The library's report (one per
# process) gives its breakdown. Commit in .gpu/commit.txt.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
C=$(cat .gpu/commit.txt)
LIB=$G/libdetcoll-nccl.so
export DETCOLL_NCCL_LIB=$LIB DETCOLL_COMMIT=$C DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache-$$
TORCH_NCCL=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))')
export DETCOLL_REAL_NCCL=$TORCH_NCCL
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1"
start=$(date +%s)
log() { echo "$(date +%T) +$(( $(date +%s) - start ))s $*" | tee -a "$O/summary.txt"; }
step() {
	local name=$1 t=$2; shift 2
	local s=$(date +%s)
	timeout -k 5 "$t" "$@" > "$O/$name.log" 2>&1
	log "$name rc=$? $(( $(date +%s) - s ))s"
}
MPS=0
finish() {
	[ $MPS = 1 ] && echo quit | nvidia-cuda-mps-control
	log done
	cd "$OUT" && tar czf run.tgz r && rm -rf r
}
trap finish EXIT
cp .gpu/commit.txt "$O/"
HOSTS=$O/hosts.sh
printf '#!/bin/bash\nexport NCCL_HOSTID=detcoll-vhost-$RANK\nexec "$@"\n' > "$HOSTS"; chmod +x "$HOSTS"
RUN1="torchrun --standalone --nproc-per-node 1"
RUN2="env $NET torchrun --standalone --nproc-per-node 2 --no-python $HOSTS python3"
PY=python/tests
TORCH_LIB=$(dirname "$TORCH_NCCL")

# W=1, no MPS.
step build-latency 60 gcc -O2 -I/usr/local/cuda/include -I"$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))')" cmd/libdetcoll-nccl/testdata/latency.c -L/usr/local/cuda/lib64 -L"$TORCH_LIB" -lcudart -l:libnccl.so.2 -Wl,-rpath,"$TORCH_LIB" -o "$O/latency"
step warm 60 env LD_PRELOAD=$LIB "$O/latency"
for i in 1 2; do
	step c-nccl-$i 60 "$O/latency"
	step c-lib-$i 60 env LD_PRELOAD=$LIB "$O/latency"
done
step c-lib-report 60 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-c-w1-%p.json "$O/latency"
step hostpath 120 "$G/cuda.test" -test.run '^$' -test.bench '^BenchmarkHostPathGPU$' -test.benchtime 200000x -test.cpuprofile "$O/hostpath.prof"
for i in 1 2 3; do
	step host-w1-nccl-$i 60 $RUN1 $PY/gpu_hostcost.py "$O/host-w1-nccl-$i.json" nccl
	step host-w1-lib-$i 60 env LD_PRELOAD=$LIB $RUN1 $PY/gpu_hostcost.py "$O/host-w1-lib-$i.json" libdetcoll-nccl
done
step host-w1-report 60 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-host-w1-%p.json $RUN1 $PY/gpu_hostcost.py "$O/host-w1-report.json" libdetcoll-nccl+report
# Does torch call NCCL for a reduce_scatter_tensor at W=1? The report says.
step patterns-w1 90 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-patterns-w1-%p.json $RUN1 $PY/gpu_patterns.py "$O/patterns-w1.json"

# W=2 under MPS.
export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d)
nvidia-cuda-mps-control -d && MPS=1
for i in 1 2 3; do
	step host-w2-nccl-$i 90 $RUN2 $PY/gpu_hostcost.py "$O/host-w2-nccl-$i.json" nccl
	step host-w2-lib-$i 90 env LD_PRELOAD=$LIB $RUN2 $PY/gpu_hostcost.py "$O/host-w2-lib-$i.json" libdetcoll-nccl
done
step host-w2-report 90 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-host-w2-%p.json $RUN2 $PY/gpu_hostcost.py "$O/host-w2-report.json" libdetcoll-nccl+report
step patterns-w2 150 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-patterns-w2-%p.json $RUN2 $PY/gpu_patterns.py "$O/patterns-w2.json"
