package cuda

import (
	"bytes"
	"fmt"

	"github.com/detcoll/detcoll/internal/core/base"
	"github.com/detcoll/detcoll/internal/core/proto"
)

// The constants the kernels share with Go are written once, here and in
// internal/core/proto, and reach the kernels as a generated header: kernelHeader
// is prepended to every kernel file when it is compiled (kernels.go), and
// kernels/proto.h holds the same text for readers
// (TestKernelHeaderCurrent keeps it current; go generate rewrites it).
//
//go:generate go test -run ^TestKernelHeaderCurrent$ . -args -update

// define is one #define of the header.
type define struct {
	name  string
	value int64
	doc   string
}

// headerGroups are the header's defines, in groups with a heading each.
func headerGroups() []struct {
	heading string
	defs    []define
} {
	phase := func(p proto.Phase) int64 { return int64(p) }
	return []struct {
		heading string
		defs    []define
	}{
		{"Limits.", []define{
			{"DC_MAX_WORLD", maxWorld, "ranks: the missing-rank mask is one 64-bit word"},
			{"DC_MAX_WORK", maxWork, "buffers per launch"},
			{"DC_MAX_STEPS", maxSteps, "entries of a launch's step table"},
			{"DC_BLOCK", block, "threads per block of every launch"},
			{"DC_MAX_LEAVES", maxLeaves, "hosts whose sums treesum.cu adds (internal/backend/hier)"},
		}},
		{"Control block of a rank's buffer (bytes, layout.go).", []define{
			{"DC_OFF_STAGE", offStage, ""},
			{"DC_OFF_DONE", offDone, ""},
			{"DC_OFF_REDUCED", offReduced, ""},
			{"DC_OFF_STATUS", offStatus, ""},
			{"DC_OFF_SIG", offSig, ""},
			{"DC_SIG_WORDS", sigWords, fmt.Sprintf("a signature slot: proto's %d words, then the rank's premulsum scalar", proto.SignatureWords)},
			{"DC_SIG_CMP", proto.SignatureWords, "the words of a slot that ranks compare"},
			{"DC_OFF_CLAIM", offClaim, ""},
			{"DC_OFF_COUNT_STAGE", offCountStage, ""},
			{"DC_OFF_COUNT_REDUCED", offCountReduced, ""},
			{"DC_OFF_COUNT_DONE", offCountDone, ""},
			{"DC_OFF_TICKET", offTicket, "LL: blocks take their windows in the order they start"},
			{"DC_OFF_PEERS", offPeers, ""},
			{"DC_OFF_REG", offReg, "a registered call's input and output (window.go's regWord), written with the signature"},
			{"DC_OFF_PROF", offProf, "DETCOLL_CUDA_PROFILE: the LL launches' spans (profile.h, profile.go)"},
			{"DC_OFF_ACK", offAck, "ack[p]: rank p's done, pushed here by p"},
			{"DC_OFF_SENT1", offSent1, "sent1[p]: rank p pushed its parts of the input here (push path)"},
			{"DC_OFF_SENT2", offSent2, "sent2[p]: rank p pushed its reduced part here (push path), or read this rank's input and wrote its sums (registered)"},
			{"DC_OFF_STOPPED", offStopped, "stopped[p]: rank p's kernels have stopped (written by its host in Close)"},
			{"DC_CTRL_SIZE", ctrlSize, ""},
			{"DC_LL_HDR", llHeader, "LL: the signature lines at the head of a receive slot"},
			{"DC_SHARD_ALIGN", shardAlign, ""},
			{"DC_SIG_REGISTERED", proto.SigRegistered, "signature word 4: the call's buffers are registered"},
			{"DC_REG_OFF_BITS", regOffBits, "a regWord: the window + 1 above these bits, the offset in it below"},
		}},
		{"Host-mapped error record (bytes, layout.go).", []define{
			{"DC_REC_ABORT", recAbort, ""},
			{"DC_REC_VALID", recValid, ""},
			{"DC_REC_CODE", recCode, ""},
			{"DC_REC_PHASE", recPhase, ""},
			{"DC_REC_OP", recOp, ""},
			{"DC_REC_SEQ", recSeq, ""},
			{"DC_REC_MISSING", recMissing, ""},
			{"DC_REC_AUX", recAux, ""},
			{"DC_REC_SIGS", recSigs, ""},
		}},
		{"A launch's step table (Args.steps): the kernels' primitives, which run executes in order (steptable.go).", stepDefines()},
		{"What a reducing launch computes (Args.calc, plan.go's calcOf; reduce.h).", []define{
			{"DC_CALC_NODE", calcNode, "the operator at the tree's nodes: 0 (add), DC_CALC_MAX or DC_CALC_MIN"},
			{"DC_CALC_MAX", calcMax, ""},
			{"DC_CALC_MIN", calcMin, ""},
			{"DC_CALC_PRE", calcPre, "premulsum: each leaf times its rank's scalar"},
			{"DC_CALC_POST", calcPost, "avg: the root divided by W"},
			{"DC_CALC_SIGNED", calcSigned, "integers: max, min and avg are signed"},
			{"DC_CALC_TYPE_SHIFT", calcTypeShift, "the element type, in 4 bits from here: a DC_TYPE_*"},
			{"DC_TYPE_BF16", typeBF16, ""},
			{"DC_TYPE_F16", typeF16, ""},
			{"DC_TYPE_F32", typeF32, ""},
			{"DC_TYPE_F64", typeF64, ""},
			{"DC_TYPE_I8", typeI8, "integers by width: int8 and uint8"},
			{"DC_TYPE_I16", typeI16, ""},
			{"DC_TYPE_I32", typeI32, ""},
			{"DC_TYPE_I64", typeI64, ""},
		}},
		{"Error record codes.", []define{
			{"DC_CODE_TIMEOUT", codeTimeout, ""},
			{"DC_CODE_MISMATCH", codeMismatch, ""},
			{"DC_CODE_PEER", codePeer, ""},
			{"DC_CODE_ABORT", codeAbort, ""},
		}},
		{"What a wait waits for (proto.Phase).", []define{
			{"DC_PHASE_RESERVE", phase(proto.PhaseReserve), ""},
			{"DC_PHASE_READY", phase(proto.PhaseReady), ""},
			{"DC_PHASE_REDUCED", phase(proto.PhaseReduced), ""},
		}},
		{"The status word (proto.StatusWord): a failure kind (base.FailureKind) in the high half, the culprit rank + 1 in the low half.", []define{
			{"DC_STATUS_KIND_SHIFT", proto.StatusKindShift, ""},
			{"DC_FAIL_LOST", int64(base.FailureLost), ""},
			{"DC_FAIL_TIMEOUT", int64(base.FailureTimeout), ""},
			{"DC_FAIL_MISMATCH", int64(base.FailureMismatch), ""},
		}},
	}
}

// stepDefines are the step table's primitives, DC_S_<name>.
func stepDefines() []define {
	d := make([]define, numStepOps)
	for o := range numStepOps {
		d[o] = define{"DC_S_" + stepOpDocs[o].name, int64(o), stepOpDocs[o].doc}
	}
	return d
}

// kernelHeader returns kernels/proto.h.
func kernelHeader() []byte {
	var b bytes.Buffer
	b.WriteString("// proto.h: the constants the kernels share with Go. Generated from\n" +
		"// internal/backend/cuda/header.go by go generate; DO NOT EDIT.\n")
	for _, g := range headerGroups() {
		fmt.Fprintf(&b, "\n// %s\n", g.heading)
		for _, d := range g.defs {
			fmt.Fprintf(&b, "#define %s %d", d.name, d.value)
			if d.doc != "" {
				fmt.Fprintf(&b, "  // %s", d.doc)
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
