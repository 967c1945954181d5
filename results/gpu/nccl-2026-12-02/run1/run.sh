#!/bin/bash
# Device run 1 of issue 21 (one H200): libdetcoll-nccl under the ways
# PyTorch, vLLM and SGLang call NCCL, at W=1 and at W=2 as two NCCL hosts
# on the one GPU under MPS (NCCL_HOSTID per rank, NCCL on its sockets).
# Commit in .gpu/commit.txt. PART=check: the patterns' bits; PART=measure:
# host cost per call, memory, the host path's profile.
set -u
O=${OUT:?}/r; G=$PWD/.gpu; mkdir -p "$O"
C=$(cat .gpu/commit.txt)
LIB=$G/libdetcoll-nccl.so
export DETCOLL_NCCL_LIB=$LIB DETCOLL_COMMIT=$C
# The NCCL torch bundles (2.28.9), for the library too: one NCCL per process.
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
export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d)
finish() {
	echo quit | nvidia-cuda-mps-control
	log done
	cd "$OUT" && tar czf run.tgz r && rm -rf r
}
trap finish EXIT
nvidia-cuda-mps-control -d
cp .gpu/commit.txt "$O/"
# Each rank an NCCL host of its own (set before NCCL starts).
HOSTS=$O/hosts.sh
printf '#!/bin/bash\nexport NCCL_HOSTID=detcoll-vhost-$RANK\nexec "$@"\n' > "$HOSTS"; chmod +x "$HOSTS"
RUN1="torchrun --standalone --nproc-per-node 1"
RUN2="env $NET torchrun --standalone --nproc-per-node 2 --no-python $HOSTS python3"
export DETCOLL_CACHE_DIR=/tmp/detcoll-kernel-cache-$$
PY=python/tests

if [ "${PART:-check}" = check ]; then
	nvidia-smi > "$O/nvidia-smi.txt" 2>&1
	python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())' > "$O/versions.txt" 2>&1
	echo "$TORCH_NCCL" >> "$O/versions.txt"
	nm -D --defined-only "$LIB" | wc -l >> "$O/versions.txt"
	# W=1: an empty kernel cache first (the cold start), then warm.
	step patterns-w1-cold 120 env LD_PRELOAD=$LIB DETCOLL_NCCL_DEBUG=1 DETCOLL_NCCL_REPORT=$O/report-patterns-w1.json $RUN1 $PY/gpu_patterns.py "$O/patterns-w1-cold.json"
	step patterns-w1 90 env LD_PRELOAD=$LIB $RUN1 $PY/gpu_patterns.py "$O/patterns-w1.json"
	step patterns-w1-nccl 90 $RUN1 $PY/gpu_patterns.py "$O/patterns-w1-nccl.json"
	step ctypes-w1 90 env DETCOLL_NCCL_REPORT=$O/report-ctypes-w1.json $RUN1 $PY/gpu_ctypes.py "$O/ctypes-w1.json"
	step torch-w1 120 env LD_PRELOAD=$LIB $RUN1 $PY/gpu_torch.py "$O/torch-w1.json"
	# W=2: two NCCL hosts on the one GPU, under MPS.
	step ctypes-w2 150 env DETCOLL_NCCL_DEBUG=1 DETCOLL_NCCL_REPORT=$O/report-ctypes-w2.json $RUN2 $PY/gpu_ctypes.py "$O/ctypes-w2.json"
	step patterns-w2 150 env LD_PRELOAD=$LIB DETCOLL_NCCL_DEBUG=1 DETCOLL_NCCL_REPORT=$O/report-patterns-w2.json $RUN2 $PY/gpu_patterns.py "$O/patterns-w2.json"
	step patterns-w2-nccl 150 $RUN2 $PY/gpu_patterns.py "$O/patterns-w2-nccl.json"
	step torch-w2 150 env LD_PRELOAD=$LIB CHUNK_ELEMENTS=6000000 $RUN2 $PY/gpu_torch.py "$O/torch-w2.json"
else
	# Host cost per call, NCCL and the library alternating, then the
	# library with its report (the breakdown; the report's clocks cost a
	# little), then the Go API's host path profiled.
	for i in 1 2; do
		step host-w1-nccl-$i 60 $RUN1 $PY/gpu_hostcost.py "$O/host-w1-nccl-$i.json" nccl
		step host-w1-lib-$i 60 env LD_PRELOAD=$LIB $RUN1 $PY/gpu_hostcost.py "$O/host-w1-lib-$i.json" libdetcoll-nccl
	done
	step host-w1-report 60 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-host-w1.json $RUN1 $PY/gpu_hostcost.py "$O/host-w1-report.json" libdetcoll-nccl+report
	for i in 1 2; do
		step host-w2-nccl-$i 90 $RUN2 $PY/gpu_hostcost.py "$O/host-w2-nccl-$i.json" nccl
		step host-w2-lib-$i 90 env LD_PRELOAD=$LIB $RUN2 $PY/gpu_hostcost.py "$O/host-w2-lib-$i.json" libdetcoll-nccl
	done
	step host-w2-report 90 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-host-w2.json $RUN2 $PY/gpu_hostcost.py "$O/host-w2-report.json" libdetcoll-nccl+report
	step hostpath-prof 90 "$G/cuda.test" -test.run '^$' -test.bench '^BenchmarkHostPathGPU$' -test.benchtime 20000x -test.cpuprofile "$O/hostpath.prof"
fi
