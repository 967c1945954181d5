#!/bin/bash
# The library's operators under torch (issue 23), one H200: the library
# built at eafe221 into .gpu (carried), test_pure's reference tests with
# torch, gpu_torch.py at W=1, then at W=2 (two NCCL hosts on the GPU, MPS).
# probe.py was run first, under NCCL alone and under the library.
set -u; O=$OUT; LIB=$PWD/.gpu/libdetcoll-nccl.so
(cd python/tests && timeout 60 python3 -m unittest test_pure.ReferenceTest) > $O/unit.log 2>&1; echo unit rc=$?
NCCLDIR=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')
export DETCOLL_REAL_NCCL=$NCCLDIR/lib/libnccl.so.2 DETCOLL_CACHE_DIR=/tmp/dcc PYTHONUNBUFFERED=1
timeout 120 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-w1-%p.json torchrun --standalone --nproc-per-node 1 python/tests/gpu_torch.py $O/torch-w1.json > $O/torch-w1.log 2>&1; echo torch-w1 rc=$?
H=$O/hosts.sh; printf '#!/bin/bash\nexport NCCL_HOSTID=detcoll-vhost-$RANK\nexec "$@"\n' > $H; chmod +x $H
export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d); nvidia-cuda-mps-control -d; sleep 1
timeout 200 env LD_PRELOAD=$LIB DETCOLL_NCCL_REPORT=$O/report-w2-%p.json NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 CHUNK_ELEMENTS=6000000 torchrun --standalone --nproc-per-node 2 --no-python $H python3 python/tests/gpu_torch.py $O/torch-w2.json > $O/torch-w2.log 2>&1; echo torch-w2 rc=$?
echo quit | nvidia-cuda-mps-control
