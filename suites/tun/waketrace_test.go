package tun

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// wakeTracer runs bpf/wake.c on one single-queue tap: it counts the wakes
// of the stopped queue, and those that came over a full ring.
type wakeTracer struct {
	objs wakeObjects
	link link.Link
}

// traceWakes attaches bpf/wake.c to rig's tap until the test ends; a
// tracer that cannot load is an environment fault, one the kernel skipped
// an instrument fault.
func traceWakes(tb testing.TB, rig *tapRig) *wakeTracer {
	tb.Helper()
	tr, err := attachWakes(rig)
	if err != nil {
		observe.Fault(tb, feature.Environment, "%v", err)
	}
	tb.Cleanup(func() { tr.Close() })
	instrument.WatchMisses(tb, "bpf/wake.c's "+tr.objs.WakeEnter.String(), tr.objs.WakeEnter)
	return tr
}

func attachWakes(rig *tapRig) (*wakeTracer, error) {
	defer profile.Running(profile.Setup).End()
	mod, err := tunTypes()
	if err != nil {
		return nil, err
	}
	ino, err := dropmon.NetnsInode(int(rig.e.NS))
	if err != nil {
		return nil, err
	}
	vars := map[string]any{wakeVarIfindex: uint32(rig.ifindex), wakeVarNetns: uint32(ino)}
	for name, path := range map[string][]string{
		wakeVarTfilesOff:   {"tun_struct", "tfiles"},
		wakeVarProducerOff: {"tun_file", "tx_ring", "producer"},
		wakeVarQueueOff:    {"tun_file", "tx_ring", "queue"},
	} {
		off, err := instrument.Offset(mod, path[0], path[1:]...)
		if err != nil {
			return nil, err
		}
		vars[name] = uint32(off)
	}
	spec, err := loadWake()
	if err != nil {
		return nil, err
	}
	for name, v := range vars {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("set %s of bpf/wake.c: %w", name, err)
		}
	}
	tr := &wakeTracer{}
	if err := spec.LoadAndAssign(&tr.objs, nil); err != nil {
		return nil, fmt.Errorf("load bpf/wake.c (fentry on netif_tx_wake_queue; needs BTF): %w", err)
	}
	if tr.link, err = link.AttachTracing(link.TracingOptions{Program: tr.objs.WakeEnter}); err != nil {
		tr.Close()
		return nil, fmt.Errorf("attach %v: %w", tr.objs.WakeEnter, err)
	}
	return tr, nil
}

// checkRaceDrops checks tun's drops with backpressure during a race
// against the wakes tr saw: each drop needs a wake that came over a full
// ring (bpf/wake.c says why). A tracer that could not read the ring lost
// wakes: an instrument fault.
func checkRaceDrops(t *testing.T, tr *wakeTracer, drops uint64, l counters.Accounting) {
	t.Helper()
	w, err := tr.counts()
	assert.NilError(t, err)
	t.Logf("tun drops %d; %v", drops, w)
	if w.Unread > 0 {
		observe.Lost(t, "bpf/wake.c could not read the ring at %d wakes: %v", w.Unread, w)
	}
	assert.Check(t, drops <= w.Full,
		"tun drops with backpressure: %d, each needs a wake over a full ring: %v; %v", drops, w, l)
}

// tunTypes is the BTF that holds tun's types: its module's, or the
// kernel's where tun is built in (kernels/config has CONFIG_TUN=y).
func tunTypes() (*btf.Spec, error) {
	mod, err := btf.LoadKernelModuleSpec("tun")
	if errors.Is(err, os.ErrNotExist) {
		mod, err = btf.LoadKernelSpec()
	}
	if err != nil {
		return nil, fmt.Errorf("BTF of tun: %w", err)
	}
	return mod, nil
}

// wakes is the tracer's tally summed over CPUs.
type wakes struct {
	All, Full, Unread uint64
}

func (w wakes) String() string {
	return fmt.Sprintf("%d wakes of the stopped queue, %d over a full ring, %d unread", w.All, w.Full, w.Unread)
}

func (tr *wakeTracer) counts() (wakes, error) {
	var per []wakeCounts
	if err := tr.objs.Counts.Lookup(uint32(0), &per); err != nil {
		return wakes{}, fmt.Errorf("read the wake counters: %w", err)
	}
	var sum wakes
	for _, c := range per {
		sum.All += c.Wakes
		sum.Full += c.Full
		sum.Unread += c.Unread
	}
	return sum, nil
}

func (tr *wakeTracer) Close() error {
	var err error
	if tr.link != nil {
		err = tr.link.Close()
	}
	return errors.Join(err, tr.objs.Close())
}
