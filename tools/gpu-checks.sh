# The behaviour checks of a change on the GPU machine, for device runs:
# tools/gpu-run.sh sources it (with O, the output folder, and G, the
# unpacked binaries, set) before a run's steps, which call the checks the
# change needs. Each runs under MPS where ranks share the GPU (W >= 2 on one
# GPU), as ../shared/gpu/README.md says, and leaves its logs, JSON and a
# line per step in $O/summary.txt; check_summary appends what passed and
# failed. Binaries: tools/gpu-build.sh. A run's steps file, run by
# `bash tools/gpu-run.sh STEPS` carrying [".gpuz"], is for example:
#
#	check_aot
#	check_conformance; check_verify 2 4 8; check_hosts; check_kills
#
#	check_aot             the kernels built ahead of time, into $O/aot (and the kernel cache, for the steps after it)
#	check_conformance     the conformance suite: W=1, then W=2 and wider (3, 4, 8), two and four communicators
#	check_verify N...     detcoll verify --backend cuda at each W
#	check_hosts           verify across two and four virtual hosts (NCCL on sockets), 1 and 2 ranks a host
#	check_hosts_device    nccl.test's GPU tests across two virtual hosts: graphs replayed, mismatches, a skipped call
#	check_bench_hosts H P detcoll bench across H virtual hosts of P ranks against NCCL's all-reduce over all ranks, every mode
#	check_kills           soak with a rank killed in Open, calls and Close, on one host and across two (KILL_WHERE, KILL_REPEATS)
#	check_operators N...  every operator: the conformance operator and mismatch cases, verify and a soak at each W
#	check_fsdp            an FSDP2 step under libdetcoll-nccl at W=2 (two NCCL hosts on the GPU), with its record
#	check_torch           gpu_torch.py (every reduction torch makes, against the reference) under the library at W=2
#	check_torch_hosts H P gpu_torch.py under the library across H virtual hosts of P ranks (DETCOLL_NCCL_HOSTS=serve)
#	check_latency_hosts H P  gpu_latency.py across H virtual hosts of P ranks: NCCL alone, then the library serving
#	check_summary         the verdicts of the logs, into summary.txt

# NET sends NCCL's traffic between virtual hosts through its socket
# transport, as between machines.
NET="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1"
export DETCOLL_CUDA_SHARE_DEVICES=1 # ranks past the GPUs share them

check_aot() {
	step aot 180 "$G/aot" -out "$O/aot" -cache
	ls -la "$O/aot" >> "$O/summary.txt"
}

check_conformance() {
	step conformance-w1 150 "$G/cuda.test" -test.run 'TestConformanceGPU' -test.v -test.timeout 140s
	mps_start
	step conformance-shared 540 "$G/cuda.test" -test.run 'TestConformanceGPU|TestDeviceWiderWorldsGPU|TestDeviceTwoCommsGPU|TestDeviceFourCommsGPU' -test.v -test.timeout 530s
	mps_stop
}

check_verify() {
	mps_start
	local w
	for w in "$@"; do
		step verify-w$w 120 "$G/detcoll" verify --backend cuda -n "$w"
	done
	mps_stop
}

check_hosts() {
	mps_start
	step hosts-2x1 120 env $NET "$G/detcoll" verify --backend cuda -n 2 --hosts 2
	step hosts-2x2 150 env $NET "$G/detcoll" verify --backend cuda -n 4 --hosts 2
	step hosts-4x1 150 env $NET "$G/detcoll" verify --backend cuda -n 4 --hosts 4
	mps_stop
}

check_hosts_device() {
	mps_start
	step hosts-device 300 "$G/nccl.test" -test.run 'TestHosts.*GPU' -test.v -test.timeout 290s
	mps_stop
}

check_bench_hosts() {
	local h=$1 per=$2 b
	mps_start
	for b in "" before/; do
		[ -x "$G/${b}detcoll" ] || continue
		step bench-hosts-${h}x$per${b:+-before} 240 env $NET "$G/${b}detcoll" bench --backend cuda -n $((h * per)) --hosts $h \
			--dtype bfloat16 --operations all_reduce --size-bytes 1KiB,64KiB,1MiB,16MiB --warmup 10 --iterations 30 \
			--output "$O/bench-hosts-${h}x$per${b:+-before}.json"
	done
	mps_stop
}

# A client killed under MPS may keep the daemon from taking new ones for a
# moment: each kill gets a fresh daemon. KILL_WHERE (default "one-host
# two-hosts") picks the layouts: one-host (2 ranks), two-hosts (2 virtual
# hosts of 1 rank), two-hosts-of-two (2 of 2). KILL_REPEATS (default 1)
# runs each kill that many times, the killed rank going down from the last
# (rank 0 hosts the store).
check_kills() {
	local where during i n rank VH
	for where in ${KILL_WHERE:-one-host two-hosts}; do
		n=2 VH=env
		case $where in
		two-hosts) VH="env $NET DETCOLL_VIRTUAL_HOSTS=2" ;;
		two-hosts-of-two) n=4 VH="env $NET DETCOLL_VIRTUAL_HOSTS=2" ;;
		esac
		for during in open call close; do
			local after=
			case $during in
			open) after="--kill-rank-after 200ms" ;;
			call) after="--kill-rank-after 1s" ;;
			esac
			for i in $(seq "${KILL_REPEATS:-1}"); do
				rank=$((n - 1 - (i - 1) % n))
				mps_start
				step kill-$where-$during-$i 40 $VH "$G/detcoll" soak --backend cuda -n $n --max-bytes 1MiB --duration 8s \
					--kill-rank $rank $after --kill-during $during --output "$O/kill-$where-$during-$i.json"
				mps_stop
				grep -h "^kill:" "$O/kill-$where-$during-$i.log" | head -1 >> "$O/summary.txt"
			done
		done
	done
}

check_operators() {
	mps_start
	step operators-conformance 300 "$G/cuda.test" -test.run 'TestConformanceGPU/(OperatorsMatchReference|MismatchFailsEveryRank)|TestDeviceGraphGPU|TestTreeReduceGPU' -test.v -test.timeout 290s
	local w
	for w in "$@"; do
		step operators-verify-w$w 120 "$G/detcoll" verify --backend cuda -n "$w"
		step operators-soak-w$w 60 "$G/detcoll" soak --backend cuda -n "$w" --duration "${SOAK_DURATION:-20s}" --output "$O/operators-soak-w$w.json"
	done
	mps_stop
}

# torch_env sets what the torch checks share: HOSTS, a wrapper that gives
# every rank its own NCCL host (NCCL_HOSTID: torchrun --no-python ... "$HOSTS"
# PROGRAM), and LIB, the environment that
# preloads libdetcoll-nccl.so ($G, tools/gpu-build.sh lib) over PyTorch's
# own NCCL. Ranks sharing the GPU are then NCCL hosts of their own, which
# NCCL requires of ranks on one GPU ("Duplicate GPU detected").
torch_env() {
	local real
	real=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))')
	LIB=(LD_PRELOAD="$G/libdetcoll-nccl.so" DETCOLL_NCCL_LIB="$G/libdetcoll-nccl.so" DETCOLL_REAL_NCCL="$real")
	HOSTS=$O/hosts.sh
	printf '#!/bin/bash\nexport NCCL_HOSTID=detcoll-vhost-$RANK\nexec "$@"\n' > "$HOSTS"
	chmod +x "$HOSTS"
}

# check_fsdp needs libdetcoll-nccl.so in $G and PyTorch with its NCCL.
check_fsdp() {
	torch_env
	mps_start
	step fsdp-w2 90 env "${LIB[@]}" DETCOLL_NCCL_REPORT=$O/report-fsdp-w2.json $NET \
		torchrun --standalone --nproc-per-node 2 --no-python "$HOSTS" python3 python/tests/gpu_fsdp.py "$O/fsdp-w2.json"
	mps_stop
}

# check_torch needs what check_fsdp needs.
check_torch() {
	torch_env
	mps_start
	step torch-w2 150 env "${LIB[@]}" DETCOLL_NCCL_REPORT=$O/report-torch-w2-%p.json $NET CHUNK_ELEMENTS=1000000 \
		torchrun --standalone --nproc-per-node 2 --no-python "$HOSTS" python3 python/tests/gpu_torch.py "$O/torch-w2.json"
	mps_stop
}

# check_torch_hosts H P: H hosts of P ranks on the one GPU: the library
# splits its communicators into H machines (DETCOLL_VIRTUAL_HOSTS), and
# NCCL (torch's communicators and the library's rails) takes every rank
# for a host of its own (torch_env), reached over sockets ($NET); detcoll's
# IPC between a host's ranks does not mind the shared GPU.
check_torch_hosts() {
	local h=$1 per=$2
	torch_env
	mps_start
	step torch-hosts-${h}x$per 180 env "${LIB[@]}" DETCOLL_NCCL_REPORT=$O/report-torch-hosts-${h}x$per-%p.json \
		DETCOLL_NCCL_HOSTS=serve DETCOLL_VIRTUAL_HOSTS=$h $NET CHUNK_ELEMENTS=1000000 \
		torchrun --standalone --nproc-per-node $((h * per)) --no-python "$HOSTS" python3 python/tests/gpu_torch.py "$O/torch-hosts-${h}x$per.json"
	mps_stop
}

# check_latency_hosts H P: torch's all_reduce timed (gpu_latency.py) in
# check_torch_hosts's layout, under NCCL alone and then under the library
# serving across the hosts: the ratio the issue asks for, in one call.
check_latency_hosts() {
	local h=$1 per=$2
	torch_env
	mps_start
	step latency-nccl-${h}x$per 180 env $NET \
		torchrun --standalone --nproc-per-node $((h * per)) --no-python "$HOSTS" python3 python/tests/gpu_latency.py "$O/latency-nccl-${h}x$per.json" nccl
	step latency-detcoll-${h}x$per 180 env "${LIB[@]}" DETCOLL_NCCL_REPORT=$O/report-latency-${h}x$per-%p.json \
		DETCOLL_NCCL_HOSTS=serve DETCOLL_VIRTUAL_HOSTS=$h $NET \
		torchrun --standalone --nproc-per-node $((h * per)) --no-python "$HOSTS" python3 python/tests/gpu_latency.py "$O/latency-detcoll-${h}x$per.json" detcoll
	mps_stop
}

check_summary() {
	local f
	for f in "$O"/*.log; do
		echo "== $(basename "$f" .log)"
		grep -E "^(--- FAIL|--- PASS|FAIL|PASS|ok )|slowest survivor|wrong|checks" "$f" | tail -8
	done >> "$O/summary.txt"
}
