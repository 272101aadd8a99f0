package devmap

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/netenv"
)

// Rig is one test's topology and programs, all inside its own namespace:
//
//	in0p ──veth──► in0 [xdp_main, native] ──devmap──► a0, b0, c0 ──veth──► a0p, b0p, c0p [xdp_sink]
//
// in0p also has xdp_sink, so a broadcast copy sent back to in0 is counted.
// A raw tracepoint program counts xdp:xdp_devmap_xmit for flushes from in0.
type Rig struct {
	Env  *netenv.Env
	Objs bpfObjects
	// In is in0 (the ingress device), Sender is its peer in0p.
	In, Sender netlink.Link
	// Dst are a0, b0, c0; Sink their peers.
	Dst, Sink [3]netlink.Link
}

// noProg is the program fd of a devmap entry without a program (struct
// bpf_devmap_val.bpf_prog.fd; the kernel attaches one only for fd > 0).
const noProg = -1

// NewRig builds the rig for tb; trace attaches the xdp_devmap_xmit counter.
func NewRig(tb testing.TB, trace bool) *Rig {
	tb.Helper()
	r := &Rig{Env: netenv.New(tb)}
	r.In, r.Sender = r.Env.Veth(tb, "in0", "in0p", 0)
	for i, name := range []string{"a0", "b0", "c0"} {
		r.Dst[i], r.Sink[i] = r.Env.Veth(tb, name, name+"p", 0)
	}
	if err := loadBpfObjects(&r.Objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			tb.Fatalf("load bpf/devmap.c: %+v", ve)
		}
		tb.Fatalf("load bpf/devmap.c: %v (needs root and a kernel with BPF, XDP and BTF)", err)
	}
	tb.Cleanup(func() { r.Objs.Close() })

	for _, l := range append(r.Sink[:], r.Sender) {
		r.AttachXDP(tb, l, r.Objs.XdpSink)
	}
	r.SetConfig(tb, func(c *bpfConfig) { c.Ingress = uint32(r.In.Attrs().Index) })
	if trace {
		for _, l := range append(r.Dst[:], r.In) {
			r.Watch(tb, l)
		}
		tp, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "xdp_devmap_xmit", Program: r.Objs.TraceDevmapXmit})
		if err != nil {
			tb.Fatalf("attach raw tracepoint xdp_devmap_xmit: %v (needs CONFIG_BPF_EVENTS)", err)
		}
		tb.Cleanup(func() { tp.Close() })
	}
	return r
}

// Watch makes the xdp_devmap_xmit counter count flushes to l.
func (r *Rig) Watch(tb testing.TB, l netlink.Link) {
	tb.Helper()
	if err := r.Objs.Watch.Put(ifindex(l), uint32(1)); err != nil {
		tb.Fatalf("watch map: %v", err)
	}
}

// AttachXDP attaches prog to l in native (driver) mode.
func (r *Rig) AttachXDP(tb testing.TB, l netlink.Link, prog *ebpf.Program) {
	tb.Helper()
	if err := r.attachXDP(l, prog, nl.XDP_FLAGS_DRV_MODE); err != nil {
		tb.Fatalf("attach XDP %s to %s in driver mode: %v", prog, l.Attrs().Name, err)
	}
}

// attachXDP attaches prog to l with the XDP_FLAGS_* mode flags.
func (r *Rig) attachXDP(l netlink.Link, prog *ebpf.Program, flags int) error {
	return r.Env.Do(func() error {
		return netlink.LinkSetXdpFdWithFlags(l, prog.FD(), flags)
	})
}

// SetConfig changes the main program's configuration.
func (r *Rig) SetConfig(tb testing.TB, change func(*bpfConfig)) {
	tb.Helper()
	var c bpfConfig
	if err := r.Objs.Config.Lookup(uint32(0), &c); err != nil {
		tb.Fatalf("read config map: %v", err)
	}
	change(&c)
	if err := r.Objs.Config.Put(uint32(0), &c); err != nil {
		tb.Fatalf("write config map: %v", err)
	}
}

// Route makes frame n go to key keys[n % len(keys)].
func (r *Rig) Route(tb testing.TB, keys ...uint32) {
	tb.Helper()
	for i, k := range keys {
		if err := r.Objs.Pattern.Put(uint32(i), k); err != nil {
			tb.Fatalf("pattern map: %v", err)
		}
	}
	r.SetConfig(tb, func(c *bpfConfig) { c.PatternLen = uint32(len(keys)) })
}

// Map returns the devmap (BPF_MAP_TYPE_DEVMAP or DEVMAP_HASH) the main
// program redirects through, after telling it which.
func (r *Rig) Map(tb testing.TB, hash bool) *ebpf.Map {
	tb.Helper()
	r.SetConfig(tb, func(c *bpfConfig) { c.UseHash = b2u(hash) })
	if hash {
		return r.Objs.DevmapHash
	}
	return r.Objs.Devmap
}

// SetEntry points key of m at l with prog (nil: no program). The kernel
// resolves the ifindex in the caller's namespace, so the update runs in the
// rig's.
func (r *Rig) SetEntry(tb testing.TB, m *ebpf.Map, key uint32, l netlink.Link, prog *ebpf.Program) {
	tb.Helper()
	if err := r.Env.Do(func() error { return m.Put(key, entryValue(l, prog)) }); err != nil {
		tb.Fatalf("devmap update key %d → %s with %v: %v", key, l.Attrs().Name, prog, err)
	}
}

func entryValue(l netlink.Link, prog *ebpf.Program) bpfBpfDevmapVal {
	v := bpfBpfDevmapVal{Ifindex: uint32(l.Attrs().Index)}
	v.BpfProg.Fd = noProg
	if prog != nil {
		v.BpfProg.Fd = int32(prog.FD())
	}
	return v
}

// State reads the programs' counters.
func (r *Rig) State(tb testing.TB) bpfState {
	tb.Helper()
	var s bpfState
	if err := r.Objs.State.Lookup(uint32(0), &s); err != nil {
		tb.Fatalf("read state map: %v", err)
	}
	return s
}

// Runs reads the whole runs log as the models write it.
func (r *Rig) Runs(tb testing.TB) []Run {
	tb.Helper()
	raw := r.RawRuns(tb)
	out := make([]Run, 0, len(raw))
	for _, br := range raw {
		out = append(out, Run{Kind: byte(br.Kind), Frame: br.Frame, Dev: br.Dest, Prog: br.Prog})
	}
	return out
}

// RawRuns reads the whole runs log with every field (verdicts, metadata,
// ingress device); it fails tb when the log wrapped.
func (r *Rig) RawRuns(tb testing.TB) []bpfRun {
	tb.Helper()
	return readLog[bpfRun](tb, r.Objs.Runs, r.State(tb).Seq, "runs log")
}

// WaitRuns waits until the programs have logged n runs and returns the
// log; on timeout it fails tb with the count it saw.
func (r *Rig) WaitRuns(ctx context.Context, tb testing.TB, n uint32) []Run {
	tb.Helper()
	seq := func() (uint32, error) { return r.State(tb).Seq, nil }
	if got, err := counters.WaitFor(ctx, 5*time.Second, seq, func(s uint32) bool { return s >= n }); err != nil {
		tb.Fatalf("program runs logged: %d, want %d: %v", got, n, err)
	}
	return r.Runs(tb)
}

// Flushes reads the xdp_devmap_xmit log.
func (r *Rig) Flushes(tb testing.TB) []bpfFlush {
	tb.Helper()
	return readLog[bpfFlush](tb, r.Objs.Flushes, r.State(tb).Flushes, "flush log")
}

// readLog reads the first n entries of an array map the programs append
// to; it fails tb when the log wrapped (n beyond its room).
func readLog[T any](tb testing.TB, m *ebpf.Map, n uint32, what string) []T {
	tb.Helper()
	if n > m.MaxEntries() {
		tb.Fatalf("%s wrapped: %d entries logged, room for %d: push fewer frames", what, n, m.MaxEntries())
	}
	out := make([]T, 0, n)
	for i := uint32(0); i < n; i++ {
		var v T
		if err := m.Lookup(i, &v); err != nil {
			tb.Fatalf("read %s[%d]: %v", what, i, err)
		}
		out = append(out, v)
	}
	return out
}

// FlushTotals sums the xdp_devmap_xmit log.
type FlushTotals struct {
	Flushes     int
	Sent, Drops uint64
}

func (f FlushTotals) String() string {
	return fmt.Sprintf("xdp_devmap_xmit: %d flushes, sent=%d drops=%d", f.Flushes, f.Sent, f.Drops)
}

// Totals reads the xdp_devmap_xmit sums, which unlike the log never wrap.
func (r *Rig) Totals(tb testing.TB) FlushTotals {
	tb.Helper()
	s := r.State(tb)
	return FlushTotals{Flushes: int(s.Flushes), Sent: s.Sent, Drops: s.Drops}
}

// Received returns how many of our frames the sink on l counted.
func (r *Rig) Received(tb testing.TB, l netlink.Link) uint64 {
	tb.Helper()
	return lookupCount(tb, r.Objs.Received, ifindex(l), "received", l)
}

// Foreign returns how many frames that were not ours the sink on l counted.
func (r *Rig) Foreign(tb testing.TB, l netlink.Link) uint64 {
	tb.Helper()
	return lookupCount(tb, r.Objs.Foreign, ifindex(l), "foreign", l)
}

// Marked returns how many of our frames the sink on l counted with mark
// in the payload (0: unmarked).
func (r *Rig) Marked(tb testing.TB, l netlink.Link, mark uint32) uint64 {
	tb.Helper()
	return lookupCount(tb, r.Objs.Marks, bpfMarkKey{Ifindex: ifindex(l), Mark: mark}, "marks", l)
}

// sinks are the devices with xdp_sink: the destinations' peers and in0p.
func (r *Rig) sinks() []netlink.Link { return append(r.Sink[:], r.Sender) }

// ReceivedAll sums our frames at the sinks.
func (r *Rig) ReceivedAll(tb testing.TB) uint64 {
	tb.Helper()
	var n uint64
	for _, l := range r.sinks() {
		n += r.Received(tb, l)
	}
	return n
}

// ForeignAll sums the foreign frames at the sinks.
func (r *Rig) ForeignAll(tb testing.TB) uint64 {
	tb.Helper()
	var n uint64
	for _, l := range r.sinks() {
		n += r.Foreign(tb, l)
	}
	return n
}

// lookupCount reads a counter the sink keeps for l; a missing key is 0.
func lookupCount(tb testing.TB, m *ebpf.Map, key any, what string, l netlink.Link) uint64 {
	tb.Helper()
	var n uint64
	if err := m.Lookup(key, &n); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		tb.Fatalf("read %s[%s]: %v", what, l.Attrs().Name, err)
	}
	return n
}

// Seen returns what the devmap program tagged prog saw on l.
func (r *Rig) Seen(tb testing.TB, l netlink.Link, prog uint32) bpfSeen {
	tb.Helper()
	var s bpfSeen
	err := r.Objs.Seen.Lookup(bpfSeenKey{Ifindex: uint32(l.Attrs().Index), Prog: prog}, &s)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		tb.Fatalf("read seen[%s/%s]: %v", l.Attrs().Name, progName(prog), err)
	}
	return s
}

// LinkStats reads a device's stats64 inside the namespace.
func (r *Rig) LinkStats(tb testing.TB, l netlink.Link) counters.Link {
	tb.Helper()
	s, err := counters.ReadLink(r.Env.Handle, l.Attrs().Name)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return s
}

// ifindex is a link's index as the programs see it.
func ifindex(l netlink.Link) uint32 { return uint32(l.Attrs().Index) }

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
