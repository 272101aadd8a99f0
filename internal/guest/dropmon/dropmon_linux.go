package dropmon

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// reasons returns the running kernel's enum skb_drop_reason and its BTF.
func reasons() (*btf.Spec, *btf.Enum, error) {
	spec, err := instrument.KernelBTF.Kernel()
	if err != nil {
		// Every kernel the suites run on has BTF: a missing one is a
		// broken build or image, not a missing feature.
		return nil, nil, fmt.Errorf("load kernel BTF (build the kernel with CONFIG_DEBUG_INFO_BTF=y): %w", err)
	}
	var e *btf.Enum
	if err := spec.TypeByName("skb_drop_reason", &e); err != nil {
		if errors.Is(err, btf.ErrNotFound) {
			return nil, nil, feature.Unsupported(feature.DropReasons, "kernel BTF has no enum skb_drop_reason")
		}
		return nil, nil, fmt.Errorf("kernel BTF enum skb_drop_reason: %w", err)
	}
	return spec, e, nil
}

// Reason returns the value of the enum skb_drop_reason member name (e.g.
// "SKB_DROP_REASON_FULL_RING") in the running kernel. A kernel without the
// enum or without that member gets a feature.Unsupported error named after
// the member.
func Reason(name feature.Feature) (uint32, error) {
	_, e, err := reasons()
	if err != nil {
		if errors.Is(err, feature.ErrNotSupported) {
			return 0, feature.Unsupported(name, "%v", err)
		}
		return 0, err
	}
	for _, v := range e.Values {
		if v.Name == string(name) {
			return uint32(v.Value), nil
		}
	}
	return 0, feature.Unsupported(name, "kernel BTF enum skb_drop_reason has %d members, not this one", len(e.Values))
}

// NetnsInode returns the nsfs inode number of the namespace file fd, what
// Filter.NetnsInode wants.
func NetnsInode(fd int) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("fstat netns fd %d: %w", fd, err)
	}
	return st.Ino, nil
}

// Monitor counts kfree_skb drops by reason from Attach until Close.
type Monitor struct {
	counts *ebpf.Map // BPF_MAP_TYPE_HASH: reason -> u64 drops, a key per enum member
	prog   *ebpf.Program
	tp     link.Link
}

// Attach starts counting the drops f picks with a tp_btf/kfree_skb
// program (BTF, no tracefs: works in a minimal VM). It needs root and
// kernel BTF; a kernel without drop reasons gets feature.Unsupported.
func Attach(f Filter) (*Monitor, error) {
	defer profile.Running(profile.Setup).End()
	spec, e, err := reasons()
	if err != nil {
		return nil, err
	}
	insns, err := filter(spec, f)
	if err != nil {
		return nil, err
	}
	m := &Monitor{}
	// Every reason gets its slot before the program runs, so the program
	// only adds and no two CPUs race to insert the same reason.
	m.counts, err = ebpf.NewMap(&ebpf.MapSpec{
		Name:       "xc_drops",
		Type:       ebpf.Hash,
		KeySize:    4,
		ValueSize:  8,
		MaxEntries: uint32(len(e.Values)),
	})
	if err != nil {
		return nil, fmt.Errorf("create the drop-reason counters: %w", err)
	}
	for _, v := range e.Values {
		if err := m.counts.Put(uint32(v.Value), uint64(0)); err != nil {
			m.counts.Close()
			return nil, fmt.Errorf("add reason %s to the drop-reason counters: %w", v.Name, err)
		}
	}
	// trace_kfree_skb(struct sk_buff *skb, void *location,
	//                 enum skb_drop_reason reason, ...): ctx is the u64
	// arguments, R6 keeps it across the filter.
	insns = append(asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}, insns...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.R6, 16, asm.DWord),
		asm.StoreMem(asm.RFP, -4, asm.R2, asm.Word),
	)
	insns = append(insns, instrument.CountKey(m.counts)...)
	m.prog, err = newProgram(&ebpf.ProgramSpec{
		Name: "xc_kfree_skb", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "kfree_skb",
		License: "GPL", Instructions: insns,
	})
	if err != nil {
		m.counts.Close()
		return nil, fmt.Errorf("load the tp_btf/kfree_skb drop counter (needs root and kernel BTF): %w", err)
	}
	m.tp, err = link.AttachTracing(link.TracingOptions{Program: m.prog})
	if err != nil {
		m.prog.Close()
		m.counts.Close()
		return nil, fmt.Errorf("attach tp_btf/kfree_skb: %w", err)
	}
	return m, nil
}

// filter returns the instructions that jump to "out" for a drop f does
// not pick; R6 is the tracepoint's ctx. The field offsets come from the
// running kernel's BTF, as CO-RE would relocate them:
//
//	struct sk_buff { ... struct net_device *dev; ... };
//	struct net_device { ... int ifindex; ... possible_net_t nd_net; ... };
//	typedef struct { struct net *net; } possible_net_t;
//	struct net { ... struct ns_common ns; ... };
//	struct ns_common { ... unsigned int inum; ... };
func filter(spec *btf.Spec, f Filter) (asm.Instructions, error) {
	if f.Ifindex == 0 && f.NetnsInode == 0 {
		return nil, nil
	}
	dev, err := instrument.Offset(spec, "sk_buff", "dev")
	if err != nil {
		return nil, err
	}
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R6, 0, asm.DWord), // skb
		asm.LoadMem(asm.R3, asm.R2, dev, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, "out"),
	}
	if f.Ifindex != 0 {
		ifindex, err := instrument.Offset(spec, "net_device", "ifindex")
		if err != nil {
			return nil, err
		}
		insns = append(insns,
			asm.LoadMem(asm.R4, asm.R3, ifindex, asm.Word),
			asm.JNE.Imm32(asm.R4, int32(f.Ifindex), "out"),
		)
	}
	if f.NetnsInode != 0 {
		ndNet, err := instrument.Offset(spec, "net_device", "nd_net", "net")
		if err != nil {
			return nil, err
		}
		inum, err := instrument.Offset(spec, "net", "ns", "inum")
		if err != nil {
			return nil, err
		}
		insns = append(insns,
			asm.LoadMem(asm.R4, asm.R3, ndNet, asm.DWord),
			asm.JEq.Imm(asm.R4, 0, "out"),
			asm.LoadMem(asm.R5, asm.R4, inum, asm.Word),
			asm.JNE.Imm32(asm.R5, int32(uint32(f.NetnsInode)), "out"),
		)
	}
	return insns, nil
}

// Count returns how many drops with reason were seen.
func (m *Monitor) Count(reason uint32) (uint64, error) {
	var n uint64
	if err := m.counts.Lookup(reason, &n); errors.Is(err, ebpf.ErrKeyNotExist) {
		return 0, fmt.Errorf("drop reason %d is not in the kernel's enum skb_drop_reason: take the value from Reason", reason)
	} else if err != nil {
		return 0, fmt.Errorf("read drops with reason %d: %w", reason, err)
	}
	return n, nil
}

// All returns every reason seen at least once and its count.
func (m *Monitor) All() (map[uint32]uint64, error) {
	seen := map[uint32]uint64{}
	var k uint32
	var v uint64
	it := m.counts.Iterate()
	for it.Next(&k, &v) {
		if v != 0 {
			seen[k] = v
		}
	}
	return seen, it.Err()
}

// Misses returns how many kfree_skb events the program did not run for
// because it was already running on that CPU (the kernel's per-program
// recursion guard, bpf_prog_info.recursion_misses): events on any device,
// with any reason, that no count has.
func (m *Monitor) Misses() (uint64, error) {
	st, err := m.prog.Stats()
	if err != nil {
		return 0, fmt.Errorf("read the kfree_skb counter's recursion misses: %w", err)
	}
	return st.RecursionMisses, nil
}

// Close detaches the program and frees the counters.
func (m *Monitor) Close() error {
	return errors.Join(m.tp.Close(), m.prog.Close(), m.counts.Close())
}

// Watch counts, from now until tb ends, the drops with the reason called
// name (e.g. "SKB_DROP_REASON_QDISC_BURST_DROP") on the device ifindex of
// the namespace ns. A kernel whose enum skb_drop_reason lacks the reason
// cannot drop that way: Watch then returns the feature.Unsupported error
// that says so, and the caller counts 0 or skips. Any other failure fails
// tb.
func Watch(tb testing.TB, ns netns.NsHandle, ifindex int, name feature.Feature) (func() (uint64, error), error) {
	tb.Helper()
	reason, err := Reason(name)
	if errors.Is(err, feature.ErrNotSupported) {
		return nil, err
	}
	if err != nil {
		observe.Fault(tb, feature.Environment, "dropmon: %s: %v", name, err)
	}
	ino, err := NetnsInode(int(ns))
	if err != nil {
		observe.Fault(tb, feature.Environment, "dropmon: %v", err)
	}
	m, err := Attach(Filter{Ifindex: ifindex, NetnsInode: ino})
	if err != nil {
		observe.Fault(tb, feature.Environment, "dropmon: count %s on ifindex %d: %v", name, ifindex, err)
	}
	tb.Cleanup(func() { m.Close() })
	instrument.WatchMisses(tb, "the kfree_skb counter", m.prog)
	return func() (uint64, error) { return m.Count(reason) }, nil
}

// newProgram loads spec with the binary's kernel BTF (instrument.KernelBTF),
// where its attach target is looked up: ebpf.NewProgram would decode
// vmlinux's BTF again for every counter.
func newProgram(spec *ebpf.ProgramSpec) (*ebpf.Program, error) {
	coll, err := ebpf.NewCollectionWithOptions(&ebpf.CollectionSpec{
		Programs: map[string]*ebpf.ProgramSpec{spec.Name: spec},
	}, *instrument.LoadOptions())
	if err != nil {
		return nil, err
	}
	defer coll.Close()
	return coll.DetachProgram(spec.Name), nil
}
