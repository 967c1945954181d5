package cuda

import (
	"regexp"
	"strconv"
	"testing"
	"unsafe"

	"github.com/detcoll/detcoll/internal/base"
)

// TestLayoutMatchesKernels checks that the Go constants equal the
// #defines of collective.cu: the host and the kernels must agree on every
// offset, flag and code.
func TestLayoutMatchesKernels(t *testing.T) {
	defines := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define (DC_\w+) (\d+)`).FindAllStringSubmatch(string(collectiveSource), -1) {
		v, _ := strconv.Atoi(m[2])
		defines[m[1]] = v
	}
	want := map[string]int{
		"DC_MAX_WORLD": maxWorld, "DC_MAX_WORK": maxWork, "DC_BLOCK": block,
		"DC_OFF_STAGE": offStage, "DC_OFF_DONE": offDone, "DC_OFF_REDUCED": offReduced,
		"DC_OFF_STATUS": offStatus, "DC_OFF_SIG": offSig, "DC_SIG_WORDS": sigWords, "DC_OFF_CLAIM": offClaim,
		"DC_OFF_COUNT_STAGE": offCountStage, "DC_OFF_COUNT_REDUCED": offCountReduced, "DC_OFF_COUNT_DONE": offCountDone, "DC_OFF_TICKET": offTicket,
		"DC_OFF_PEERS": offPeers, "DC_OFF_ACK": offAck, "DC_OFF_SENT1": offSent1, "DC_OFF_SENT2": offSent2, "DC_OFF_STOPPED": offStopped, "DC_CTRL_SIZE": ctrlSize, "DC_LL_HDR": llHeader,
		"DC_REC_ABORT": recAbort, "DC_REC_VALID": recValid, "DC_REC_CODE": recCode, "DC_REC_PHASE": recPhase,
		"DC_REC_OP": recOp, "DC_REC_SEQ": recSeq, "DC_REC_MISSING": recMissing, "DC_REC_AUX": recAux, "DC_REC_SIGS": recSigs,
		"DC_F_RESERVE": flagReserve, "DC_F_COPYIN": flagCopyIn, "DC_F_PUBLISH": flagPublish,
		"DC_F_READY": flagReady, "DC_F_WAIT_RED": flagWaitRed, "DC_F_COMPUTE": flagCompute, "DC_F_REDUCED": flagReduced,
		"DC_F_DONE": flagDone, "DC_F_LL": flagLL, "DC_F_SENT": flagSent, "DC_F_WAIT_SENT": flagWaitSent,
		"DC_MODE_NONE": modeNone, "DC_MODE_REDUCE": modeReduce, "DC_MODE_RSHARD": modeRShard, "DC_MODE_RINPLACE": modeRInPlace,
		"DC_MODE_GATHER": modeGather, "DC_MODE_GSHARDS": modeGShards, "DC_MODE_BCAST": modeBcast,
		"DC_MODE_PUSH": modePush, "DC_MODE_RPUSH": modeRPush, "DC_MODE_GPUSHED": modeGPushed,
		"DC_MODE_PUSH_RS": modePushRS, "DC_MODE_RPUSH_RS": modeRPushRS,
		"DC_CODE_TIMEOUT": codeTimeout, "DC_CODE_MISMATCH": codeMismatch, "DC_CODE_PEER": codePeer, "DC_CODE_ABORT": codeAbort,
		"DC_PHASE_RESERVE": phaseReserve, "DC_PHASE_READY": phaseReady, "DC_PHASE_REDUCED": phaseReduced,
		"DC_SHARD_ALIGN": shardAlign,
		"DC_FAIL_LOST":   int(base.FailureLost), "DC_FAIL_TIMEOUT": int(base.FailureTimeout), "DC_FAIL_MISMATCH": int(base.FailureMismatch),
	}
	for name, v := range want {
		got, ok := defines[name]
		if !ok {
			t.Errorf("collective.cu does not define %s", name)
		} else if got != v {
			t.Errorf("%s: collective.cu says %d, Go says %d", name, got, v)
		}
	}
	if got := offPeers + 8*maxWorld; got > offAck {
		t.Errorf("the peer table ends at %d, past the ack array (%d)", got, offAck)
	}
	if offAck+8*maxWorld > offSent1 || offSent1+8*maxWorld > offSent2 || offSent2+8*maxWorld > offStopped ||
		offStopped+8*maxWorld > ctrlSize {
		t.Errorf("the pushed arrays overlap or leave the control block")
	}
	// struct Args: 7 u64, 8 u32, then DC_MAX_WORK Works of 4 u64.
	if got, want := unsafe.Sizeof(kernelArgs{}), uintptr(7*8+8*4+maxWork*32); got != want {
		t.Errorf("kernelArgs is %d bytes, struct Args %d", got, want)
	}
	if got := unsafe.Offsetof(kernelArgs{}.Work); got != 88 {
		t.Errorf("kernelArgs.Work at %d, struct Args.work at 88", got)
	}
}

// TestLLAreaAligned: the LL images are whole 64-byte lines at every world
// size, so every receive slot and scratch image stays 16-byte aligned (the
// kernels' static_assert refuses anything else at compile time, on the GPU).
func TestLLAreaAligned(t *testing.T) {
	for w := 1; w <= maxWorld; w++ {
		m := defaultLLMax(w)
		if m%64 != 0 || m < 64<<10 || llSlot(m)%16 != 0 {
			t.Errorf("W=%d: llMax %d, slot %d", w, m, llSlot(m))
		}
	}
}
