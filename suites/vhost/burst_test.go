package vhost

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"gotest.tools/v3/assert"
)

// burstDropReason is the drop reason of frames that __dev_xmit_skb() frees
// before they reach a locked qdisc, when more than net.core.qdisc_max_burst
// wait on its defer_list (Linux 7.2+). sendto() gets ENOBUFS for them but
// no qdisc counts them, so the ledger needs them from the kfree_skb
// tracepoint.
const burstDropReason = "SKB_DROP_REASON_QDISC_BURST_DROP"

// watchBurstDrops counts, from now until the test ends, the frames the
// kernel frees with burstDropReason. A kernel whose enum skb_drop_reason
// lacks it cannot drop that way, and the count stays 0.
func watchBurstDrops(tb testing.TB) func() uint64 {
	tb.Helper()
	reason, ok := dropReason(tb, burstDropReason)
	if !ok {
		return func() uint64 { return 0 }
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	assert.NilError(tb, err, "create the burst-drop counter map")
	tb.Cleanup(func() { m.Close() })
	// raw_tp/kfree_skb: ctx is the u64 arguments (skb, location, reason, ...).
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.RawTracepoint,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 16, asm.DWord),
			asm.JNE.Imm(asm.R2, int32(reason), "out"),
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		},
	})
	assert.NilError(tb, err, "load the burst-drop counter (raw_tp/kfree_skb)")
	tb.Cleanup(func() { prog.Close() })
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "kfree_skb", Program: prog})
	assert.NilError(tb, err, "attach the burst-drop counter to raw_tp/kfree_skb")
	tb.Cleanup(func() { l.Close() })
	return func() uint64 {
		var n uint64
		assert.NilError(tb, m.Lookup(uint32(0), &n))
		return n
	}
}

// dropReason returns the value of enum skb_drop_reason's name in the
// running kernel's BTF, and whether the kernel has it.
func dropReason(tb testing.TB, name string) (uint64, bool) {
	tb.Helper()
	spec, err := btf.LoadKernelSpec()
	assert.NilError(tb, err, "load the kernel's BTF (CONFIG_DEBUG_INFO_BTF)")
	var e *btf.Enum
	err = spec.TypeByName("skb_drop_reason", &e)
	if errors.Is(err, btf.ErrNotFound) {
		return 0, false
	}
	assert.NilError(tb, err, "enum skb_drop_reason in the kernel's BTF")
	for _, v := range e.Values {
		if v.Name == name {
			return v.Value, true
		}
	}
	return 0, false
}
