package instrument

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// CountKey is the tail of a hand-written counting program: it adds 1 to
// m's u64 value at the u32 key the program stored at fp-4, if m has the
// key, and returns 0 from the symbol "out", where a filter before it
// jumps for what it does not count.
func CountKey(m *ebpf.Map) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}
