package tunwake

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf/btf"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// Tracer runs bpf/wake.c on one single-queue tap.
type Tracer struct {
	probes
	objs wakeObjects
}

// Trace attaches bpf/wake.c to the tap ifindex of the namespace ns (a
// namespace file descriptor) until tb ends; a tracer that cannot load is
// an environment fault, one that missed events an instrument fault.
func Trace(tb testing.TB, ns, ifindex int) *Tracer {
	tb.Helper()
	tr := trace(tb, func() (*Tracer, error) { return Attach(ns, ifindex) })
	instrument.WatchLosses(tb, "bpf/wake.c", tr.losses)
	return tr
}

// Attach loads and attaches bpf/wake.c for the tap ifindex of the
// namespace ns (a namespace file descriptor).
func Attach(ns, ifindex int) (*Tracer, error) {
	tr := &Tracer{}
	err := tr.attach(program{
		file: "bpf/wake.c", load: loadWake,
		offsets: map[string][]string{
			wakeVarTfilesOff:   {"tun_struct", "tfiles"},
			wakeVarProducerOff: {"tun_file", "tx_ring", "producer"},
			wakeVarQueueOff:    {"tun_file", "tx_ring", "queue"},
		},
		needs: "kprobe and kretprobe on netif_tx_wake_queue; needs BTF",
	}, ns, ifindex, &tr.objs, func() []instrument.Probe {
		return []instrument.Probe{
			{Func: "netif_tx_wake_queue", Prog: tr.objs.WakeEnter},
			{Func: "netif_tx_wake_queue", Prog: tr.objs.WakeExit, Return: true},
		}
	})
	if err != nil {
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
	c, err := instrument.SumCPUs[wakeCounts](tr.objs.Counts)
	if err != nil {
		return Wakes{}, fmt.Errorf("read the wake counters: %w", err)
	}
	return Wakes{All: c.Wakes, Full: c.Full, Unread: c.Unread, Unheld: c.Unheld}, nil
}
