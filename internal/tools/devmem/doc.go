// Package devmem is the device memory of the tools and tests that run
// detcoll's collectives on a GPU (detcoll verify, bench and soak, the cuda
// backend's tests): the one place outside the backend that sets up a GPU
// and manages buffers on it.
//
//   - gpu.go: a rank's GPU, its primary context current on the calling
//     goroutine's locked thread (Open), how many GPUs are here and how
//     much memory one has free.
//   - arena.go: device memory handed out from allocations that are
//     reused or freed together (Arena), and plain copies.
//   - memory.go: buffers with guard bytes and the collectives on them
//     (Memory, a check.Memory), so that the checks of internal/testkit/check run
//     on device memory exactly as on host memory.
//   - graph.go: a stream's calls captured into an instantiated CUDA
//     graph (Capture), as the cuda backend's graph tests and detcoll
//     bench's graph mode replay them.
//
// The library never imports it: the cuda backend manages its own memory.
// It must not import a backend; it reaches the GPU only through
// internal/binding/driver, and without a driver every call fails with the
// driver's ErrUnavailable.
package devmem
