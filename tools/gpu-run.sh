#!/bin/bash
# The device runs' runner: the command of a device call, carrying .gpuz
# (tools/gpu-build.sh), is
#
#	bash tools/gpu-run.sh results/gpu/NAME/runN/steps.sh
#
# It unpacks the binaries into .gpu (G), makes the output folder O
# ($OUT/r, packed into $OUT/run.tgz at the end), sources the helpers
# (gpu-run-lib.sh: step, log, MPS; gpu-checks.sh: the behaviour checks),
# writes the binaries' commits to $O/commit.txt, points the kernel cache
# at a fresh folder, then sources the steps file: only what this run does,
# kept in results/ with what came out. Every run so starts the same way,
# written once.
set -u
steps=${1:?usage: tools/gpu-run.sh STEPS}
O=${OUT:?}/r
G=$PWD/.gpu
mkdir -p "$O"
. tools/gpu-unpack.sh
. tools/gpu-run-lib.sh
. tools/gpu-checks.sh
for f in $(cd .gpu && find . -name commit.txt | sort); do
	echo "$(dirname "$f"): $(cat ".gpu/$f")"
done > "$O/commit.txt"
export DETCOLL_CACHE_DIR=${DETCOLL_CACHE_DIR:-/tmp/dc-kernel-cache}
cp "$steps" "$O/steps.sh"
. "$steps"
check_summary
