package tunwake

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Tracer runs bpf/wake.c on one single-queue tap.
type Tracer struct {
	objs   wakeObjects
	links  map[string]link.Link
	losses *instrument.Losses
}

// Trace attaches bpf/wake.c to the tap ifindex of the namespace ns (a
// namespace file descriptor) until tb ends; a tracer that cannot load is
// an environment fault, one that missed events an instrument fault.
func Trace(tb testing.TB, ns, ifindex int) *Tracer {
	tb.Helper()
	tr, err := Attach(ns, ifindex)
	if err != nil {
		observe.Fault(tb, instrument.Cause(err), "%v", err)
	}
	tb.Cleanup(func() { tr.Close() })
	instrument.WatchLosses(tb, "bpf/wake.c", tr.losses)
	return tr
}

// Attach loads and attaches bpf/wake.c for the tap ifindex of the
// namespace ns (a namespace file descriptor).
func Attach(ns, ifindex int) (*Tracer, error) {
	defer profile.Running(profile.Setup).End()
	spec, err := instrument.Spec("bpf/wake.c", loadWake)
	if err != nil {
		return nil, err
	}
	err = setTap(spec, "bpf/wake.c", ns, ifindex, map[string][]string{
		wakeVarTfilesOff:   {"tun_struct", "tfiles"},
		wakeVarProducerOff: {"tun_file", "tx_ring", "producer"},
		wakeVarQueueOff:    {"tun_file", "tx_ring", "queue"},
	})
	if err != nil {
		return nil, err
	}
	tr := &Tracer{}
	if err := spec.LoadAndAssign(&tr.objs, instrument.LoadOptions()); err != nil {
		return nil, fmt.Errorf("load bpf/wake.c (kprobe and kretprobe on netif_tx_wake_queue; needs BTF): %w", err)
	}
	tr.links, err = instrument.AttachProbes(
		instrument.Probe{Func: "netif_tx_wake_queue", Prog: tr.objs.WakeEnter},
		instrument.Probe{Func: "netif_tx_wake_queue", Prog: tr.objs.WakeExit, Return: true})
	if err == nil {
		tr.losses, err = instrument.NewLosses([]*ebpf.Program{tr.objs.WakeEnter, tr.objs.WakeExit}, tr.links)
	}
	if err != nil {
		tr.Close()
		return nil, err
	}
	return tr, nil
}

// CheckDrops checks tun's drops with backpressure during a race against
// the wakes tr saw: each drop needs a wake that came over a full ring
// (bpf/wake.c says why). l is the race's ledger, for the message. A tracer
// that could not read the ring lost wakes: an instrument fault. It returns
// the wakes.
func CheckDrops(t *testing.T, tr *Tracer, drops uint64, l counters.Accounting) Wakes {
	t.Helper()
	w, err := tr.Counts()
	assert.NilError(t, err)
	t.Logf("tun drops %d; %v", drops, w)
	if w.Unread > 0 || w.Unheld > 0 {
		observe.Lost(t, "bpf/wake.c could not read the ring at %d wakes, nor follow %d: %v", w.Unread, w.Unheld, w)
	}
	assert.Check(t, drops <= w.Full,
		"tun drops with backpressure: %d, each needs a wake over a full ring: %v; %v", drops, w, l)
	return w
}

// tunTypes is the BTF that holds tun's types: its module's, or the
// kernel's where tun is built in (kernels/config has CONFIG_TUN=y).
func tunTypes() (*btf.Spec, error) {
	mod, err := instrument.KernelBTF.Module("tun")
	if errors.Is(err, os.ErrNotExist) {
		mod, err = instrument.KernelBTF.Kernel()
	}
	if err != nil {
		return nil, fmt.Errorf("BTF of tun: %w", err)
	}
	return mod, nil
}

// Counts reads the tally so far.
func (tr *Tracer) Counts() (Wakes, error) {
	var per []wakeCounts
	if err := tr.objs.Counts.Lookup(uint32(0), &per); err != nil {
		return Wakes{}, fmt.Errorf("read the wake counters: %w", err)
	}
	var sum Wakes
	for _, c := range per {
		sum.All += c.Wakes
		sum.Full += c.Full
		sum.Unread += c.Unread
		sum.Unheld += c.Unheld
	}
	return sum, nil
}

// Close detaches and unloads the programs.
func (tr *Tracer) Close() error {
	var errs []error
	for _, l := range tr.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(append(errs, tr.objs.Close())...)
}
