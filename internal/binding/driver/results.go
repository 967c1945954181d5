package driver

// Names and short descriptions of the CUDA and NVRTC status codes detcoll is
// likely to meet. The values are fixed by the CUDA ABI (cuda.h, nvrtc.h).

// Result codes with a name in this package's table.
const (
	ResultSuccess                  Result = 0
	ResultInvalidValue             Result = 1
	ResultOutOfMemory              Result = 2
	ResultNotInitialized           Result = 3
	ResultDeinitialized            Result = 4
	ResultStubLibrary              Result = 34
	ResultDeviceUnavailable        Result = 46
	ResultNoDevice                 Result = 100
	ResultInvalidDevice            Result = 101
	ResultInvalidImage             Result = 200
	ResultInvalidContext           Result = 201
	ResultMapFailed                Result = 205
	ResultNoBinaryForGPU           Result = 209
	ResultPeerAccessUnsupported    Result = 217
	ResultInvalidPTX               Result = 218
	ResultUnsupportedPTXVersion    Result = 222
	ResultInvalidHandle            Result = 400
	ResultIllegalState             Result = 401
	ResultNotFound                 Result = 500
	ResultNotReady                 Result = 600
	ResultIllegalAddress           Result = 700
	ResultLaunchOutOfResources     Result = 701
	ResultLaunchTimeout            Result = 702
	ResultPeerAccessAlreadyEnabled Result = 704
	ResultPeerAccessNotEnabled     Result = 705
	ResultContextIsDestroyed       Result = 709
	ResultAssert                   Result = 710
	ResultHostMemoryRegistered     Result = 712
	ResultHostMemoryNotRegistered  Result = 713
	ResultIllegalInstruction       Result = 715
	ResultMisalignedAddress        Result = 716
	ResultLaunchFailed             Result = 719
	ResultNotPermitted             Result = 800
	ResultNotSupported             Result = 801
	ResultStreamCaptureUnsupported Result = 900
	ResultStreamCaptureInvalidated Result = 901
	ResultStreamCaptureWrongThread Result = 908
	ResultUnknown                  Result = 999
)

var resultTable = map[Result]struct{ name, desc string }{
	ResultSuccess:                  {"CUDA_SUCCESS", "no error"},
	ResultInvalidValue:             {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	ResultOutOfMemory:              {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	ResultNotInitialized:           {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	ResultDeinitialized:            {"CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
	ResultStubLibrary:              {"CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	ResultDeviceUnavailable:        {"CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) busy or unavailable"},
	ResultNoDevice:                 {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	ResultInvalidDevice:            {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	ResultInvalidImage:             {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	ResultInvalidContext:           {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context (is the context current on this OS thread?)"},
	ResultMapFailed:                {"CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
	ResultNoBinaryForGPU:           {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	ResultPeerAccessUnsupported:    {"CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
	ResultInvalidPTX:               {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	ResultUnsupportedPTXVersion:    {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain"},
	ResultInvalidHandle:            {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	ResultIllegalState:             {"CUDA_ERROR_ILLEGAL_STATE", "the operation is not permitted in the current state"},
	ResultNotFound:                 {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	ResultNotReady:                 {"CUDA_ERROR_NOT_READY", "device not ready"},
	ResultIllegalAddress:           {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	ResultLaunchOutOfResources:     {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	ResultLaunchTimeout:            {"CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	ResultPeerAccessAlreadyEnabled: {"CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
	ResultPeerAccessNotEnabled:     {"CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
	ResultContextIsDestroyed:       {"CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
	ResultAssert:                   {"CUDA_ERROR_ASSERT", "device-side assert triggered"},
	ResultHostMemoryRegistered:     {"CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
	ResultHostMemoryNotRegistered:  {"CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
	ResultIllegalInstruction:       {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
	ResultMisalignedAddress:        {"CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
	ResultLaunchFailed:             {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	ResultNotPermitted:             {"CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
	ResultNotSupported:             {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	ResultStreamCaptureUnsupported: {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
	ResultStreamCaptureInvalidated: {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
	ResultStreamCaptureWrongThread: {"CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempt to terminate a thread-local capture sequence from another thread"},
	ResultUnknown:                  {"CUDA_ERROR_UNKNOWN", "unknown error"},
}

// NVRTC status codes.
const (
	NVRTCSuccess                 NVRTCResult = 0
	NVRTCOutOfMemory             NVRTCResult = 1
	NVRTCProgramCreationFailure  NVRTCResult = 2
	NVRTCInvalidInput            NVRTCResult = 3
	NVRTCInvalidProgram          NVRTCResult = 4
	NVRTCInvalidOption           NVRTCResult = 5
	NVRTCCompilation             NVRTCResult = 6
	NVRTCBuiltinOperationFailure NVRTCResult = 7
	NVRTCInternalError           NVRTCResult = 11
)

var nvrtcResultNames = map[NVRTCResult]string{
	NVRTCSuccess:                 "NVRTC_SUCCESS",
	NVRTCOutOfMemory:             "NVRTC_ERROR_OUT_OF_MEMORY",
	NVRTCProgramCreationFailure:  "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	NVRTCInvalidInput:            "NVRTC_ERROR_INVALID_INPUT",
	NVRTCInvalidProgram:          "NVRTC_ERROR_INVALID_PROGRAM",
	NVRTCInvalidOption:           "NVRTC_ERROR_INVALID_OPTION",
	NVRTCCompilation:             "NVRTC_ERROR_COMPILATION",
	NVRTCBuiltinOperationFailure: "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
	NVRTCInternalError:           "NVRTC_ERROR_INTERNAL_ERROR",
}
