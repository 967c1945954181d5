# Helpers for device run scripts (results/gpu/*/run*/run.sh): source it
# after setting O (the output folder under $OUT). step NAME SECONDS CMD...
# runs CMD with a time limit, its output in $O/NAME.log, and logs its exit
# status and time to $O/summary.txt; mps_start and mps_stop run the CUDA
# multi-process service for ranks sharing the GPU (../shared/gpu/README.md);
# pair NAME PROG runs the two roles of a two-process floor program; finish
# (on exit) stops MPS and packs $O into $OUT/run.tgz.
start=$(date +%s)
MPS=0
log() { echo "$(date +%T) +$(( $(date +%s) - start ))s $*" | tee -a "$O/summary.txt"; }
step() {
	local name=$1 t=$2; shift 2
	local s=$(date +%s)
	timeout -k 5 "$t" "$@" > "$O/$name.log" 2>&1
	log "$name rc=$? $(( $(date +%s) - s ))s"
}
mps_start() {
	export CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d) CUDA_MPS_LOG_DIRECTORY=$(mktemp -d)
	nvidia-cuda-mps-control -d && MPS=1
	sleep 1
}
mps_stop() {
	[ $MPS = 1 ] && echo quit | nvidia-cuda-mps-control
	MPS=0
	sleep 1
}
pair() {
	local name=$1 prog=$2 d
	d=$(mktemp -d)
	timeout 60 "$prog" 1 "$d" > "$O/$name-1.log" 2>&1 &
	timeout 60 "$prog" 0 "$d" > "$O/$name-0.log" 2>&1
	wait
	log "$name: $(cat "$O/$name-0.log" "$O/$name-1.log" | tr '\n' ' ')"
}
finish() {
	mps_stop
	log done
	cd "$OUT" && tar czf run.tgz r && rm -rf r
}
trap finish EXIT
