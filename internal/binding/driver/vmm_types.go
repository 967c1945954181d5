package driver

// MemHandle is a CUmemGenericAllocationHandle: physical device memory made
// by MemCreate or MemImportFD, or taken by MemRetainAllocationHandle, which
// MemMap maps at a reserved address. Each handle is released once with
// MemRelease; a mapping keeps its memory alive by itself, so a handle may go
// as soon as the memory is mapped.
type MemHandle uint64

// MemHandleType is a CUmemAllocationHandleType bit set: the kinds of
// shareable handle an allocation can be exported as.
type MemHandleType int

// Handle types.
const (
	MemHandleNone    MemHandleType = 0x0 // not exportable
	MemHandlePosixFD MemHandleType = 0x1 // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
)

// Granularity says which granularity MemAllocationGranularity returns
// (CUmemAllocationGranularity_flags).
type Granularity int

// Granularities.
const (
	GranularityMinimum     Granularity = 0x0 // what sizes and addresses must be multiples of
	GranularityRecommended Granularity = 0x1 // what is best for performance
)

// Driver constants of the virtual memory management API, used by the cgo
// implementation.
const (
	memAllocationTypePinned = 0x1 // CU_MEM_ALLOCATION_TYPE_PINNED
	memLocationTypeDevice   = 0x1 // CU_MEM_LOCATION_TYPE_DEVICE
	memAccessReadWrite      = 0x3 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
)
