# Unpacks the gzipped binaries of .gpuz (carried to the device machine
# under the size limit) into .gpu; sourced by device run scripts.
mkdir -p .gpu/before
for f in $(cd .gpuz && find . -type f); do
	mkdir -p ".gpu/$(dirname "$f")"
	case $f in
	*.gz) gunzip -c ".gpuz/$f" > ".gpu/${f%.gz}" && chmod +x ".gpu/${f%.gz}" ;;
	*) cp ".gpuz/$f" ".gpu/$f" ;;
	esac
done
# The binaries of tools/gpu-build.sh read the kernels built ahead of time
# from the carried tree.
export DETCOLL_AOT_DIR=$PWD/internal/backend/cuda/aot
