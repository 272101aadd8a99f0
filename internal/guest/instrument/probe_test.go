package instrument

import (
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// probed is the function the tests probe: getppid(2)'s, on amd64, which
// the test calls and nothing in it can fail.
const probed = "__x64_sys_getppid"

// calls is how many getppid(2) calls the tests make.
const calls = 1000

// needKprobes skips tb where probes cannot attach: -short, not root, or a
// kernel without kprobes (such as the firecracker host CI runs on). It
// needs a VM there:
//
//	go test -exec 'xmitcheck exec --kernel debian:7.3' ./internal/guest/instrument
func needKprobes(tb testing.TB) {
	tb.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		tb.Skip("-short, or not root: attaches kprobes")
	}
	_, pmu := os.Stat("/sys/bus/event_source/devices/kprobe")
	_, tracefs := os.Stat("/sys/kernel/tracing/kprobe_events")
	if pmu != nil && tracefs != nil {
		tb.Skip("the running kernel has no kprobes (no kprobe PMU, no tracefs kprobe_events)")
	}
}

// counter loads a kprobe program that adds 1 to slot key of an array.
func counter(tb testing.TB, m *ebpf.Map, key int32) *ebpf.Program {
	tb.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.Kprobe,
		License: "GPL",
		Instructions: append(asm.Instructions{
			asm.StoreImm(asm.RFP, -4, int64(key), asm.Word),
		}, CountKey(m)...),
	})
	assert.NilError(tb, err)
	tb.Cleanup(func() { p.Close() })
	return p
}

func counts(tb testing.TB, m *ebpf.Map) (entries, returns uint64) {
	tb.Helper()
	assert.NilError(tb, m.Lookup(uint32(0), &entries))
	assert.NilError(tb, m.Lookup(uint32(1), &returns))
	return entries, returns
}

func getppids() {
	for range calls {
		unix.Getppid()
	}
}

func newCounts(tb testing.TB) *ebpf.Map {
	tb.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2})
	assert.NilError(tb, err)
	tb.Cleanup(func() { m.Close() })
	return m
}

// TestProbes attaches a kprobe and a kretprobe on getppid(2) and calls it:
// each ran at least once a call (other tasks may call it too), and
// neither missed a hit, by the count the kernel keeps in the link.
func TestProbes(t *testing.T) {
	needKprobes(t)
	m := newCounts(t)
	entry, ret := counter(t, m, 0), counter(t, m, 1)
	links, err := AttachProbes(Probe{Func: probed, Prog: entry}, Probe{Func: probed, Prog: ret, Return: true})
	assert.NilError(t, err)
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	assert.Check(t, is.Len(links, 2))
	losses, err := NewLosses([]*ebpf.Program{entry, ret}, links)
	assert.NilError(t, err)

	getppids()
	entries, returns := counts(t, m)
	assert.Check(t, entries >= calls, "kprobe ran %d times for %d calls", entries, calls)
	assert.Check(t, returns >= calls, "kretprobe ran %d times for %d calls", returns, calls)
	lost, err := losses.Since()
	assert.NilError(t, err)
	assert.Check(t, is.Len(lost, 0), "lost %v", lost)
	for what, l := range links {
		n, err := ProbeMisses(l)
		assert.NilError(t, err, what)
		assert.Check(t, n == 0, "%s missed %d hits", what, n)
	}
}

// TestProbesUndone: a probe that cannot attach fails AttachProbes, naming
// it, and the probes attached before it are detached: their program no
// longer runs.
func TestProbesUndone(t *testing.T) {
	needKprobes(t)
	m := newCounts(t)
	entry := counter(t, m, 0)
	_, err := AttachProbes(Probe{Func: probed, Prog: entry}, Probe{Func: "xmitcheck_no_such_function", Prog: entry})
	assert.ErrorContains(t, err, "kprobe xmitcheck_no_such_function")
	getppids()
	entries, _ := counts(t, m)
	assert.Equal(t, entries, uint64(0), "the kprobe attached before the failure still ran")
}

// TestSum names each loss in a stable order.
func TestSum(t *testing.T) {
	n, named := Sum(map[string]uint64{"kretprobe f missed": 2, "f_enter skipped": 3})
	assert.Equal(t, n, uint64(5))
	assert.Equal(t, named, "f_enter skipped 3, kretprobe f missed 2")
	n, named = Sum(map[string]uint64{})
	assert.Equal(t, n, uint64(0))
	assert.Equal(t, named, "")
}
