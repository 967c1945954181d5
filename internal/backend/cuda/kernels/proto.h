// proto.h: the constants the kernels share with Go. Generated from
// internal/backend/cuda/header.go by go generate; DO NOT EDIT.

// Limits.
#define DC_MAX_WORLD 64  // ranks: the missing-rank mask is one 64-bit word
#define DC_MAX_WORK 8  // buffers per launch
#define DC_MAX_STEPS 8  // entries of a launch's step table
#define DC_BLOCK 512  // threads per block of every launch
#define DC_MAX_LEAVES 256  // hosts whose sums treesum.cu adds (internal/backend/hier)

// Control block of a rank's buffer (bytes, layout.go).
#define DC_OFF_STAGE 0
#define DC_OFF_DONE 128
#define DC_OFF_REDUCED 256
#define DC_OFF_STATUS 384
#define DC_OFF_SIG 512
#define DC_SIG_WORDS 8  // a signature slot: proto's 7 words, then the rank's premulsum scalar
#define DC_SIG_CMP 7  // the words of a slot that ranks compare
#define DC_OFF_CLAIM 640
#define DC_OFF_COUNT_STAGE 768
#define DC_OFF_COUNT_REDUCED 832
#define DC_OFF_COUNT_DONE 896
#define DC_OFF_TICKET 960  // LL: blocks take their windows in the order they start
#define DC_OFF_PEERS 1024
#define DC_OFF_REG 1536  // a registered call's input and output (window.go's regWord), written with the signature
#define DC_OFF_PROF 1600  // DETCOLL_CUDA_PROFILE: the LL launches' spans (profile.h, profile.go)
#define DC_OFF_ACK 2048  // ack[p]: rank p's done, pushed here by p
#define DC_OFF_SENT1 2560  // sent1[p]: rank p pushed its parts of the input here (push path)
#define DC_OFF_SENT2 3072  // sent2[p]: rank p pushed its reduced part here (push path), or read this rank's input and wrote its sums (registered)
#define DC_OFF_STOPPED 3584  // stopped[p]: rank p's kernels have stopped (written by its host in Close)
#define DC_CTRL_SIZE 4096
#define DC_LL_HDR 128  // LL: the signature lines at the head of a receive slot
#define DC_SHARD_ALIGN 64
#define DC_SIG_REGISTERED 4294967296  // signature word 4: the call's buffers are registered
#define DC_REG_OFF_BITS 40  // a regWord: the window + 1 above these bits, the offset in it below

// Host-mapped error record (bytes, layout.go).
#define DC_REC_ABORT 0
#define DC_REC_VALID 64
#define DC_REC_CODE 72
#define DC_REC_PHASE 80
#define DC_REC_OP 88
#define DC_REC_SEQ 96
#define DC_REC_MISSING 104
#define DC_REC_AUX 112
#define DC_REC_SIGS 128

// A launch's step table (Args.steps): the kernels' primitives, which run executes in order (steptable.go).
#define DC_S_END 0  // the table's end
#define DC_S_AWAIT_ACKS 1  // await done >= seq-1 (the acks pushed here)
#define DC_S_AWAIT_STAGE 2  // await stage >= seq
#define DC_S_AWAIT_REDUCED 3  // await reduced >= seq
#define DC_S_AWAIT_SENT1 4  // push path: await sent1 >= seq
#define DC_S_AWAIT_SENT2 5  // push and registered paths: await sent2 >= seq
#define DC_S_CHECK 6  // compare the peers' signatures with this call's
#define DC_S_PUBLISH_STAGE 7  // write the signature, then stage = seq
#define DC_S_PUBLISH_REDUCED 8  // reduced = seq
#define DC_S_PUBLISH_SENT1 9  // sent1 = seq at every peer
#define DC_S_PUBLISH_SENT2 10  // sent2 = seq at every peer
#define DC_S_PUBLISH_DONE 11  // done = seq, and pushed into every peer's acks
#define DC_S_COPY_IN 12  // copy the inputs into this rank's staging
#define DC_S_REDUCE 13  // out = T(every staging)
#define DC_S_REDUCE_SHARD 14  // out = T(this rank's W-th of every staging)
#define DC_S_REDUCE_IN_PLACE 15  // own staging's shard = T(that shard of every staging)
#define DC_S_GATHER 16  // out[p*n:] = staging p
#define DC_S_GATHER_SHARDS 17  // out's shard p = staging p's shard p
#define DC_S_BROADCAST 18  // out = the root's staging
#define DC_S_PUSH 19  // copy input part p into rank p's staging
#define DC_S_PUSH_SCATTER 20  // PUSH of a reduce-scatter
#define DC_S_REDUCE_PUSH 21  // sum this rank's part into the output and every peer's staging
#define DC_S_REDUCE_PUSH_SCATTER 22  // sum this rank's part into the output
#define DC_S_GATHER_PUSHED 23  // copy the peers' sums into the output
#define DC_S_REDUCE_REG 24  // registered: sum this rank's part of every rank's input into every rank's output
#define DC_S_REDUCE_REG_SCATTER 25  // registered reduce-scatter: sum this rank's part of every rank's input into its output
#define DC_S_LL 26  // the call by the LL protocol; the next entry is its compute
#define DC_S_ALONE 27  // W=1: from the input; the next entry is its compute

// What a reducing launch computes (Args.calc, plan.go's calcOf; reduce.h).
#define DC_CALC_NODE 3  // the operator at the tree's nodes: 0 (add), DC_CALC_MAX or DC_CALC_MIN
#define DC_CALC_MAX 1
#define DC_CALC_MIN 2
#define DC_CALC_PRE 4  // premulsum: each leaf times its rank's scalar
#define DC_CALC_POST 8  // avg: the root divided by W
#define DC_CALC_SIGNED 16  // integers: max, min and avg are signed
#define DC_CALC_TYPE_SHIFT 8  // the element type, in 4 bits from here: a DC_TYPE_*
#define DC_TYPE_BF16 1
#define DC_TYPE_F16 2
#define DC_TYPE_F32 3
#define DC_TYPE_F64 4
#define DC_TYPE_I8 5  // integers by width: int8 and uint8
#define DC_TYPE_I16 6
#define DC_TYPE_I32 7
#define DC_TYPE_I64 8

// Error record codes.
#define DC_CODE_TIMEOUT 1
#define DC_CODE_MISMATCH 2
#define DC_CODE_PEER 3
#define DC_CODE_ABORT 4

// What a wait waits for (proto.Phase).
#define DC_PHASE_RESERVE 1
#define DC_PHASE_READY 2
#define DC_PHASE_REDUCED 3

// The status word (proto.StatusWord): a failure kind (base.FailureKind) in the high half, the culprit rank + 1 in the low half.
#define DC_STATUS_KIND_SHIFT 32
#define DC_FAIL_LOST 1
#define DC_FAIL_TIMEOUT 2
#define DC_FAIL_MISMATCH 3
