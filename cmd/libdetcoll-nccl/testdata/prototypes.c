// prototypes.c: compiles table.h's rows as declarations after the real
// nccl.h, so that a row whose types differ from NCCL's prototype is a
// compile error (C forbids conflicting declarations). Run on a machine with
// NCCL: gcc -std=c11 -fsyntax-only -I$CUDA/include testdata/prototypes.c
#include <nccl.h>

// The device communicator's types are declared by nccl_device.h, for C++;
// to C they are opaque structs, as to the library.
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;

#include "../table.h"

#define DC_DECL(name, params, args) ncclResult_t name params;
#define DC_DECL_STR(name, params, args) const char* name params;
DC_PASS(DC_DECL)
DC_WRAP(DC_DECL)
DC_WRAP_STR(DC_DECL_STR)
