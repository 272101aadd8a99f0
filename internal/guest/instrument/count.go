package instrument

import (
	"reflect"

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

// SumCPUs reads key 0 of m, a per-CPU array of T (a struct of bpf2go's),
// and sums it over the CPUs: every integer field, of nested structs and
// arrays too, added up.
func SumCPUs[T any](m *ebpf.Map) (T, error) {
	var per []T
	var sum T
	if err := m.Lookup(uint32(0), &per); err != nil {
		return sum, err
	}
	for i := range per {
		addInto(reflect.ValueOf(&sum).Elem(), reflect.ValueOf(&per[i]).Elem())
	}
	return sum, nil
}

// addInto adds v to sum, which have one type, field by field.
func addInto(sum, v reflect.Value) {
	switch sum.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		sum.SetUint(sum.Uint() + v.Uint())
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		sum.SetInt(sum.Int() + v.Int())
	case reflect.Struct:
		for i := range sum.NumField() {
			if sum.Type().Field(i).IsExported() {
				addInto(sum.Field(i), v.Field(i))
			}
		}
	case reflect.Array:
		for i := range sum.Len() {
			addInto(sum.Index(i), v.Index(i))
		}
	}
}
