// Package dl opens shared libraries at run time and resolves their
// symbols (dlopen, dlsym): the bindings of CUDA, NVRTC and NCCL load them
// where they are rather than link them, so that one binary runs on
// machines with and without a GPU. Without cgo, or off Linux, it has
// nothing: its callers have stubs there. The library may import it (the
// cuda backend's driver binding does).
package dl
