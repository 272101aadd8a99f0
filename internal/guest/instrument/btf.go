package instrument

import (
	"fmt"
	"math"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// Offset returns the byte offset of the member path (each step looked up
// through anonymous structs and unions) in struct typ of spec: the
// kernel's BTF, or a module's.
func Offset(spec *btf.Spec, typ string, path ...string) (int16, error) {
	var s *btf.Struct
	if err := spec.TypeByName(typ, &s); err != nil {
		return 0, fmt.Errorf("struct %s in BTF: %w", typ, err)
	}
	var t btf.Type = s
	var bits btf.Bits
	for _, name := range path {
		m, off, ok := member(t, name)
		if !ok {
			return 0, fmt.Errorf("struct %s in BTF has no member %v", typ, path)
		}
		bits += off
		t = btf.UnderlyingType(m.Type)
	}
	if bits%8 != 0 || bits/8 > math.MaxInt16 {
		return 0, fmt.Errorf("struct %s member %v is at bit %d: not a loadable offset", typ, path, bits)
	}
	return int16(bits / 8), nil
}

// member finds name in the struct or union t, descending into anonymous
// members, and returns it with its offset from the start of t.
func member(t btf.Type, name string) (btf.Member, btf.Bits, bool) {
	var ms []btf.Member
	switch c := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		ms = c.Members
	case *btf.Union:
		ms = c.Members
	default:
		return btf.Member{}, 0, false
	}
	for _, m := range ms {
		if m.Name == name {
			return m, m.Offset, true
		}
		if m.Name == "" {
			if inner, off, ok := member(m.Type, name); ok {
				return inner, m.Offset + off, true
			}
		}
	}
	return btf.Member{}, 0, false
}

// KernelBTF is the test binary's cache of the running kernel's BTF and its
// modules': decoding vmlinux's takes 0.3 to 0.4 s under the emulator, and
// every type lookup, and every program load whose CO-RE relocations or
// attach target need kernel types, decoded it again. The kernel's types do
// not change while it runs; a module's are read when first asked for.
var KernelBTF = btf.NewCache()

// LoadOptions are the options every load of a BPF collection in the suites
// and their instruments takes: the shared KernelBTF.
func LoadOptions() *ebpf.CollectionOptions { return &ebpf.CollectionOptions{Cache: KernelBTF} }
