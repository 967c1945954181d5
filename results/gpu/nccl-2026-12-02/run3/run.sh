#!/bin/bash
# Device run 3 of issue 21 (one H200): the checks again on the commit in
# .gpu/commit.txt (after runs 1-2's fixes: one report per process, a group
# finished in phase 0); the host's cost of one kernel launch on this
# machine (launchcost.cu); the library's Go side profiled under torch.
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
R3=results/gpu/nccl-2026-12-02/run3

# W=1, no MPS.
step build-launchcost 120 nvcc -O2 -arch=sm_90 -o "$O/launchcost" $R3/launchcost.cu
step launchcost 60 "$O/launchcost"
step ctypes-w1 120 env DETCOLL_NCCL_REPORT=$O/report-ctypes-w1-%p.json $RUN1 $PY/gpu_ctypes.py "$O/ctypes-w1.json"
step torch-w1 90 env LD_PRELOAD=$LIB $RUN1 $PY/gpu_torch.py "$O/torch-w1.json"
step host-w1-prof 60 env LD_PRELOAD=$LIB DETCOLL_NCCL_CPUPROFILE=$O/cpu-w1-%p.prof $RUN1 $PY/gpu_hostcost.py "$O/host-w1-prof.json" libdetcoll-nccl+profile

# W=2 under MPS.
export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d)
nvidia-cuda-mps-control -d && MPS=1
step ctypes-w2 150 env DETCOLL_NCCL_REPORT=$O/report-ctypes-w2-%p.json $RUN2 $PY/gpu_ctypes.py "$O/ctypes-w2.json"
step patterns-w2 150 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-patterns-w2-%p.json $RUN2 $PY/gpu_patterns.py "$O/patterns-w2.json"
step torch-w2 150 env LD_PRELOAD=$LIB CHUNK_ELEMENTS=6000000 $RUN2 $PY/gpu_torch.py "$O/torch-w2.json"
step host-w2-prof 90 env LD_PRELOAD=$LIB DETCOLL_NCCL_CPUPROFILE=$O/cpu-w2-%p.prof $RUN2 $PY/gpu_hostcost.py "$O/host-w2-prof.json" libdetcoll-nccl+profile
