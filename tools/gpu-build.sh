#!/bin/bash
# Builds the binaries a device run needs, here (the GPU machine has no Go),
# gzipped into .gpuz, which a run carries (tools/gpu-unpack.sh unpacks it
# there into .gpu), stamped with this checkout's commit (commit.txt).
#
#	tools/gpu-build.sh [--before REV] [TARGET...]
#
# TARGETs: detcoll, cuda.test (internal/backend/cuda), lib
# (libdetcoll-nccl.so), aot (tools/aot), nccl.test, driver.test
# (internal/binding/driver); by default detcoll,
# cuda.test, lib and aot. --before REV also builds REV's detcoll and
# cuda.test (those of the TARGETs) into .gpuz/before, for a before/after
# in one device call. The carry holds 64 MiB with the tracked tree: the
# script says what is left. This checkout's binaries are built with
# -tags detcoll_noaot: they read the kernels built ahead of time from the
# carried tree (DETCOLL_AOT_DIR, set by tools/gpu-unpack.sh) instead of
# holding a copy each.
set -euo pipefail
cd "$(dirname "$0")/.."

before=
if [ "${1:-}" = --before ]; then
	before=$2
	shift 2
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(detcoll cuda.test lib aot)

# build DIR TARGET...: the TARGETs of the checkout in the working
# directory, into DIR, gzipped.
build() {
	local out=$1
	shift
	mkdir -p "$out"
	local flags=(-buildvcs=true -trimpath "-ldflags=-s -w" ${TAGS:+-tags=$TAGS})
	for t in "$@"; do
		case $t in
		detcoll) go build "${flags[@]}" -o "$out/detcoll" ./cmd/detcoll ;;
		cuda.test) go test -c "${flags[@]}" -o "$out/cuda.test" ./internal/backend/cuda ;;
		nccl.test) go test -c "${flags[@]}" -o "$out/nccl.test" ./nccl ;;
		driver.test) go test -c "${flags[@]}" -o "$out/driver.test" ./internal/binding/driver ;;
		aot) go build "${flags[@]}" -o "$out/aot" ./tools/aot ;;
		lib)
			go build "${flags[@]}" -buildmode=c-shared -o "$out/libdetcoll-nccl.so" ./cmd/libdetcoll-nccl
			rm -f "$out/libdetcoll-nccl.h"
			;;
		*)
			echo "gpu-build: unknown target $t" >&2
			exit 2
			;;
		esac
	done
	git rev-parse --short=12 HEAD > "$out/commit.txt"
	find "$out" -maxdepth 1 -type f ! -name commit.txt -exec gzip -9 -f {} +
}

out=$PWD/.gpuz
rm -rf "$out"
# GOFLAGS here may say -buildvcs=false; the binaries must name their commit.
GOFLAGS= TAGS=detcoll_noaot build "$out" "${targets[@]}"
if [ -n "$before" ]; then
	old=()
	for t in "${targets[@]}"; do
		case $t in detcoll | cuda.test) old+=("$t") ;; esac
	done
	wt=$(mktemp -d)
	git worktree add -q --detach "$wt" "$before"
	(cd "$wt" && GOFLAGS= build "$out/before" "${old[@]}")
	git worktree remove --force "$wt"
fi
tree=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
carried=$(du -sb "$out" | cut -f1)
echo "gpu-build: .gpuz $((carried >> 20)) MiB, the tracked tree $((tree >> 20)) MiB: $(((64 << 20) - tree - carried >> 20)) MiB of the carry left"
