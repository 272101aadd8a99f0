package qdisc

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// The programs here are a few instructions each, written with cilium/ebpf's
// asm package; the fast path tracer, which reads kernel structs through
// CO-RE, is C (bpf/fastpath.c, compiled by bpf2go, see gen.go).

// maxStream is the per-CPU array slot for frames that are not xmitcheck's
// or whose stream does not fit the array: streams the suite uses stay below.
const maxStream = 255

// netTxSoftirq is NET_TX_SOFTIRQ in enum softirq (include/linux/interrupt.h).
const netTxSoftirq = 2

// perCPUCounters is a BPF_MAP_TYPE_PERCPU_ARRAY of u64 counters.
func perCPUCounters(name string, n uint32) (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: name, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: n})
	if err != nil {
		return nil, fmt.Errorf("create per-CPU array %s: %w", name, err)
	}
	return m, nil
}

// sumCounter adds up slot key of a per-CPU counter array over all CPUs.
func sumCounter(m *ebpf.Map, key uint32) (uint64, error) {
	var vals []uint64
	if err := m.Lookup(key, &vals); err != nil {
		return 0, fmt.Errorf("read counter %d of %s: %w", key, m, err)
	}
	var sum uint64
	for _, v := range vals {
		sum += v
	}
	return sum, nil
}

// incrementSlot is the tail shared by both programs: it expects the slot
// number in R5, increments that slot of m and falls through to "out".
func incrementSlot(m *ebpf.Map) asm.Instructions {
	return asm.Instructions{
		asm.StoreMem(asm.RFP, -4, asm.R5, asm.Word).WithSymbol("count"),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	}
}

// streamCounterXDP returns an XDP program that spins spin iterations (a
// consumer slower than the senders keeps the device's ring full, so the
// queue stops and wakes all the time), counts every frame in slot "stream"
// of m (slot maxStream for frames that are not xmitcheck's, see
// traffic.Frame) and drops it.
//
//	dst(6) src(6) ethertype(2)=0x88B5 magic(4)="xmit" stream(4, BE) seq(8)
func streamCounterXDP(m *ebpf.Map, spin int32) (*ebpf.Program, error) {
	defer profile.Running(profile.Setup).End()
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R6, spin),
		asm.JEq.Imm(asm.R6, 0, "parse"),
		asm.Sub.Imm(asm.R6, 1).WithSymbol("spin"),
		asm.JNE.Imm(asm.R6, 0, "spin"),
		// struct xdp_md { __u32 data; __u32 data_end; ... };
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word).WithSymbol("parse"),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Imm(asm.R5, maxStream),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 22),
		asm.JGT.Reg(asm.R4, asm.R3, "count"),
		// Loads are little-endian: 0x88B5 on the wire reads 0xB588,
		// "xmit" reads 0x74696d78.
		asm.LoadMem(asm.R0, asm.R2, 12, asm.Half),
		asm.JNE.Imm(asm.R0, 0xB588, "count"),
		asm.LoadMem(asm.R0, asm.R2, 14, asm.Word),
		asm.JNE.Imm(asm.R0, 0x74696d78, "count"),
		asm.LoadMem(asm.R0, asm.R2, 18, asm.Word),
		asm.HostTo(asm.BE, asm.R0, asm.Word),
		asm.JGE.Imm(asm.R0, maxStream, "count"),
		asm.Mov.Reg(asm.R5, asm.R0),
	}
	insns = append(insns, incrementSlot(m)...)
	insns = append(insns,
		asm.Mov.Imm(asm.R0, 1).WithSymbol("out"), // XDP_DROP
		asm.Return(),
	)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "xc_stream_count",
		Type:         ebpf.XDP,
		License:      "GPL",
		Instructions: insns,
	})
	if err != nil {
		return nil, fmt.Errorf("load XDP stream counter: %w", err)
	}
	return p, nil
}

// eventCounter counts how often a kernel event fires, on every CPU.
type eventCounter struct {
	m *ebpf.Map
	p *ebpf.Program
	l link.Link
}

// attachSoftirqRaises counts raise_softirq(NET_TX_SOFTIRQ) with a raw
// tracepoint on irq:softirq_raise (TP_PROTO(unsigned int vec_nr)). A raw
// tracepoint needs no tracefs, so it works in a minimal VM too.
func attachSoftirqRaises() (*eventCounter, error) {
	return attachCounter("xc_nettx_raise", &ebpf.ProgramSpec{Type: ebpf.RawTracepoint}, asm.Instructions{
		// struct bpf_raw_tracepoint_args { __u64 args[0]; }: args[0] is vec_nr.
		asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord),
		asm.JNE.Imm(asm.R2, netTxSoftirq, "out"),
	}, func(p *ebpf.Program) (link.Link, error) {
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: "softirq_raise", Program: p})
	})
}

// attachNetifSchedules counts calls of __netif_schedule() (a queue woken,
// a qdisc run cut short) with an fentry program (BTF, no tracefs): the
// requests to run a qdisc, of which seed 003 turns some into no NET_TX
// raise at all.
func attachNetifSchedules() (*eventCounter, error) {
	spec := &ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: "__netif_schedule"}
	return attachCounter("xc_netif_sched", spec, nil,
		func(p *ebpf.Program) (link.Link, error) { return link.AttachTracing(link.TracingOptions{Program: p}) })
}

// attachCounter loads, as a program shaped by spec, filter (which may jump
// to "out" to skip the event) followed by an increment of slot 0 of a fresh
// per-CPU counter, and attaches it.
func attachCounter(name string, spec *ebpf.ProgramSpec, filter asm.Instructions,
	attach func(*ebpf.Program) (link.Link, error)) (*eventCounter, error) {
	defer profile.Running(profile.Setup).End()
	m, err := perCPUCounters(name, 1)
	if err != nil {
		return nil, err
	}
	insns := append(filter, asm.Mov.Imm(asm.R5, 0))
	insns = append(insns, incrementSlot(m)...)
	insns = append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	spec.Name, spec.License, spec.Instructions = name, "GPL", insns
	p, err := ebpf.NewProgram(spec)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	l, err := attach(p)
	if err != nil {
		p.Close()
		m.Close()
		return nil, fmt.Errorf("attach %s: %w", name, err)
	}
	return &eventCounter{m: m, p: p, l: l}, nil
}

// Count returns the events seen since attach.
func (c *eventCounter) Count() (uint64, error) { return sumCounter(c.m, 0) }

func (c *eventCounter) Close() error {
	return errors.Join(c.l.Close(), c.p.Close(), c.m.Close())
}
