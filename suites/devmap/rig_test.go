package devmap

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// rig is one test's topology, in a namespace of its own, and the binary's
// programs (shared_test.go), their maps reset for it:
//
//	in0p ──veth──► in0 [xdp_main, native] ──devmap──► a0, b0, c0
//	                                                  a0, b0, c0 ──veth──► a0p, b0p, c0p [xdp_sink]
//
// in0p also has xdp_sink, so a broadcast copy sent back to in0 is counted.
// A raw tracepoint program counts xdp:xdp_devmap_xmit for flushes from in0
// (attachFlushCounter).
// A rig with a driver on it may serve several tests in turn (pool_test.go).
type rig struct {
	env  *netenv.Env
	objs bpfObjects
	// in is in0 (the ingress device), sender is its peer in0p.
	in, sender netlink.Link
	// dst are a0, b0, c0; sink their peers.
	dst, sink [3]netlink.Link
	// traced: the xdp_devmap_xmit counter is attached. generic: xdp_main
	// runs in generic (SKB) mode, where no bulk queue flushes.
	traced, generic bool
	// closers release what the rig holds besides its devices (a driver's
	// sender), the last first, as the rig goes (close).
	closers []func() error
	// drv is the driver on the rig, and built its devices and their XDP
	// programs once drv was on (pool_test.go).
	drv   driver
	built []linkXDP
}

// noProg is the program fd of a devmap entry without a program (struct
// bpf_devmap_val.bpf_prog.fd; the kernel attaches one only for fd > 0).
const noProg = -1

// newRig builds the rig for tb in the binary's namespace for rigs; trace
// attaches the xdp_devmap_xmit counter. The rig goes as tb ends.
func newRig(tb testing.TB, trace bool) *rig {
	tb.Helper()
	env, err := rigNamespace()
	if err != nil {
		observe.Fault(tb, feature.Environment, "devmap: a namespace for the rigs: %v", err)
	}
	return buildRig(tb, env, trace, func(r *rig) { r.closeFor(tb) })
}

// buildRig builds a rig in env, which must be bare, and readies it for tb
// (begin). release gets the rig as tb ends, even when tb ended while
// building it: the rig is release's from then on.
func buildRig(tb testing.TB, env *netenv.Env, trace bool, release func(*rig)) *rig {
	tb.Helper()
	defer profile.Start(tb, profile.Setup).End()
	if err := env.Bare(); err != nil {
		observe.Fault(tb, feature.Harness, "devmap: %v: the rig before this one should have deleted them", err)
	}
	r := &rig{env: env}
	tb.Cleanup(func() { release(r) })
	r.in, r.sender = r.env.Veth(tb, "in0", "in0p", 0)
	for i, name := range []string{"a0", "b0", "c0"} {
		r.dst[i], r.sink[i] = r.env.Veth(tb, name, name+"p", 0)
	}
	var err error
	if r.objs, err = loadShared(); err != nil {
		if errors.Is(err, instrument.ErrObject) {
			observe.Fault(tb, feature.Harness, "%v", err)
		}
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			tb.Fatalf("load bpf/devmap.c: %+v", ve)
		}
		tb.Fatalf("load bpf/devmap.c: %v (needs root and a kernel with BPF, XDP and BTF)", err)
	}
	for _, l := range r.sinks() {
		r.attachXDP(tb, l, r.objs.XdpSink)
	}
	if trace {
		if err := attachFlushCounter(&r.objs); err != nil {
			observe.Fault(tb, feature.Environment, "%v", err)
		}
		r.traced = true
	}
	r.begin(tb)
	return r
}

// begin readies the rig for tb: the maps as a fresh load leaves them, then
// the main program's ingress device and the devices whose flushes the
// xdp_devmap_xmit counter counts; and the counter's misses watched for tb.
func (r *rig) begin(tb testing.TB) {
	tb.Helper()
	if err := resetMaps(&r.objs.bpfMaps); err != nil {
		observe.Fault(tb, feature.Harness, "bpf/devmap.c's maps for a new rig: %v", err)
	}
	r.setConfig(tb, func(c *bpfConfig) { c.Ingress = ifindex(r.in) })
	if r.traced {
		for _, l := range append(r.dst[:], r.in) {
			r.watch(tb, l)
		}
		instrument.WatchMisses(tb, "the xdp_devmap_xmit counter", r.objs.TraceDevmapXmit)
	}
}

// onClose has the rig call f as it goes.
func (r *rig) onClose(f func() error) { r.closers = append(r.closers, f) }

// close releases what the rig holds, then deletes in0 and the destinations
// (their peers with them) as one batch: RTM_DELLINK returns once the
// devices are unregistered, and with them every attachment of the shared
// programs, so the namespace is bare again for the next rig.
func (r *rig) close() error {
	var errs []error
	for i := len(r.closers) - 1; i >= 0; i-- {
		errs = append(errs, r.closers[i]())
	}
	var links []netlink.Link
	for _, l := range append([]netlink.Link{r.in}, r.dst[:]...) {
		if l != nil {
			links = append(links, l)
		}
	}
	if err := r.env.DeleteLinks(links...); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// closeFor closes the rig as tb ends; a failure is the harness's own
// teardown, not a kernel behaviour under test.
func (r *rig) closeFor(tb testing.TB) {
	tb.Helper()
	if err := r.close(); err != nil {
		observe.Fault(tb, feature.Harness, "devmap: the rig's teardown: %v", err)
	}
}

// watch makes the xdp_devmap_xmit counter count flushes to l.
func (r *rig) watch(tb testing.TB, l netlink.Link) {
	tb.Helper()
	if err := r.objs.Watch.Put(ifindex(l), uint32(1)); err != nil {
		tb.Fatalf("watch map: %v", err)
	}
}

// attachXDP attaches prog to l in native (driver) mode.
func (r *rig) attachXDP(tb testing.TB, l netlink.Link, prog *ebpf.Program) {
	tb.Helper()
	if err := r.attachXDPFlags(l, prog, nl.XDP_FLAGS_DRV_MODE); err != nil {
		tb.Fatalf("attach XDP %s to %s in driver mode: %v", prog, l.Attrs().Name, err)
	}
}

// attachXDPFlags attaches prog to l with the XDP_FLAGS_* mode flags.
func (r *rig) attachXDPFlags(l netlink.Link, prog *ebpf.Program, flags int) error {
	return r.env.Do(func() error {
		return netlink.LinkSetXdpFdWithFlags(l, prog.FD(), flags)
	})
}

// setConfig changes the main program's configuration.
func (r *rig) setConfig(tb testing.TB, change func(*bpfConfig)) {
	tb.Helper()
	var c bpfConfig
	if err := r.objs.Config.Lookup(uint32(0), &c); err != nil {
		tb.Fatalf("read config map: %v", err)
	}
	change(&c)
	if err := r.objs.Config.Put(uint32(0), &c); err != nil {
		tb.Fatalf("write config map: %v", err)
	}
}

// route makes frame n go to key keys[n % len(keys)].
func (r *rig) route(tb testing.TB, keys ...uint32) {
	tb.Helper()
	for i, k := range keys {
		if err := r.objs.Pattern.Put(uint32(i), k); err != nil {
			tb.Fatalf("pattern map: %v", err)
		}
	}
	r.setConfig(tb, func(c *bpfConfig) { c.PatternLen = uint32(len(keys)) })
}

// devmap returns the devmap (BPF_MAP_TYPE_DEVMAP or DEVMAP_HASH) the main
// program redirects through, after telling it which.
func (r *rig) devmap(tb testing.TB, hash bool) *ebpf.Map {
	tb.Helper()
	r.setConfig(tb, func(c *bpfConfig) { c.UseHash = b2u(hash) })
	if hash {
		return r.objs.DevmapHash
	}
	return r.objs.Devmap
}

// setEntry points key of m at l with prog (nil: no program). The kernel
// resolves the ifindex in the caller's namespace, so the update runs in the
// rig's.
func (r *rig) setEntry(tb testing.TB, m *ebpf.Map, key uint32, l netlink.Link, prog *ebpf.Program) {
	tb.Helper()
	if err := r.env.Do(func() error { return m.Put(key, entryValue(l, prog)) }); err != nil {
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

// state reads the programs' counters.
func (r *rig) state(tb testing.TB) bpfState {
	tb.Helper()
	var s bpfState
	if err := r.objs.State.Lookup(uint32(0), &s); err != nil {
		tb.Fatalf("read state map: %v", err)
	}
	return s
}

// rawRuns reads the whole runs log with every field (verdicts, metadata,
// ingress device); it fails tb when the log wrapped.
func (r *rig) rawRuns(tb testing.TB) []bpfRun {
	tb.Helper()
	return readLog[bpfRun](tb, r.objs.Runs, r.state(tb).Seq, "runs log")
}

// flushes reads the xdp_devmap_xmit log.
func (r *rig) flushes(tb testing.TB) []bpfFlush {
	tb.Helper()
	return readLog[bpfFlush](tb, r.objs.Flushes, r.state(tb).Flushes, "flush log")
}

// events reads the runs and the flushes as one sequence: a flush goes after
// the runs logged before the tracepoint fired.
func (r *rig) events(tb testing.TB) []event {
	tb.Helper()
	runs, flushes := r.rawRuns(tb), r.flushes(tb)
	out := make([]event, 0, len(runs)+len(flushes))
	for i := 0; i <= len(runs); i++ {
		for len(flushes) > 0 && int(flushes[0].Seq) <= i {
			f := flushes[0]
			out = append(out, event{kind: 'F', dev: f.ToIfindex, size: uint32(f.Sent + f.Drops)})
			flushes = flushes[1:]
		}
		if i < len(runs) {
			br := runs[i]
			out = append(out, event{kind: byte(br.Kind), frame: br.Frame, dev: br.Dest, prog: br.Prog})
		}
	}
	return out
}

// waitEvents waits until the programs have logged n runs and returns the
// events; on timeout it fails tb with the count it saw.
func (r *rig) waitEvents(ctx context.Context, tb testing.TB, n uint32) []event {
	tb.Helper()
	seq := func() (uint32, error) { return r.state(tb).Seq, nil }
	if got, err := counters.WaitFor(ctx, 5*time.Second, seq, func(s uint32) bool { return s >= n }); err != nil {
		tb.Fatalf("program runs logged: %d, want %d: %v", got, n, err)
	}
	return r.events(tb)
}

// readLog reads the first n entries of an array map the programs append
// to; it fails tb when the log wrapped (n beyond its room).
func readLog[T any](tb testing.TB, m *ebpf.Map, n uint32, what string) []T {
	tb.Helper()
	if n > m.MaxEntries() {
		observe.Fault(tb, feature.Instrument, "%s wrapped: %d entries logged, room for %d: push fewer frames",
			what, n, m.MaxEntries())
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

// flushTotals sums the xdp_devmap_xmit log.
type flushTotals struct {
	flushes     int
	sent, drops uint64
}

func (f flushTotals) String() string {
	return fmt.Sprintf("xdp_devmap_xmit: %d flushes, sent=%d drops=%d", f.flushes, f.sent, f.drops)
}

// totals reads the xdp_devmap_xmit sums, which unlike the log never wrap.
func (r *rig) totals(tb testing.TB) flushTotals {
	tb.Helper()
	s := r.state(tb)
	return flushTotals{flushes: int(s.Flushes), sent: s.Sent, drops: s.Drops}
}

// received returns how many of our frames the sink on l counted.
func (r *rig) received(tb testing.TB, l netlink.Link) uint64 {
	tb.Helper()
	return lookupCount(tb, r.objs.Received, ifindex(l), "received", l)
}

// foreign returns how many frames that were not ours the sink on l counted.
func (r *rig) foreign(tb testing.TB, l netlink.Link) uint64 {
	tb.Helper()
	return lookupCount(tb, r.objs.Foreign, ifindex(l), "foreign", l)
}

// marked returns how many of our frames the sink on l counted with mark
// in the payload (0: unmarked).
func (r *rig) marked(tb testing.TB, l netlink.Link, mark uint32) uint64 {
	tb.Helper()
	return lookupCount(tb, r.objs.Marks, bpfMarkKey{Ifindex: ifindex(l), Mark: mark}, "marks", l)
}

// sinks are the devices with xdp_sink: the destinations' peers and in0p.
func (r *rig) sinks() []netlink.Link { return append(r.sink[:], r.sender) }

// receivedAll sums our frames at the sinks.
func (r *rig) receivedAll(tb testing.TB) uint64 {
	tb.Helper()
	var n uint64
	for _, l := range r.sinks() {
		n += r.received(tb, l)
	}
	return n
}

// foreignAll sums the foreign frames at the sinks.
func (r *rig) foreignAll(tb testing.TB) uint64 {
	tb.Helper()
	var n uint64
	for _, l := range r.sinks() {
		n += r.foreign(tb, l)
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

// seen returns what the devmap program tagged prog saw on l.
func (r *rig) seen(tb testing.TB, l netlink.Link, prog uint32) bpfSeen {
	tb.Helper()
	var s bpfSeen
	err := r.objs.Seen.Lookup(bpfSeenKey{Ifindex: uint32(l.Attrs().Index), Prog: prog}, &s)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		tb.Fatalf("read seen[%s/%s]: %v", l.Attrs().Name, progName(prog), err)
	}
	return s
}

// linkStats reads a device's stats64 inside the namespace.
func (r *rig) linkStats(tb testing.TB, l netlink.Link) counters.Link {
	tb.Helper()
	s, err := counters.ReadLink(r.env.Handle, l.Attrs().Name)
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
