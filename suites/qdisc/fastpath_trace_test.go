package qdisc

import (
	"errors"
	"fmt"
	"structs"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// fastPathTracer runs bpf/fastpath.c on one device's root qdisc.
type fastPathTracer struct {
	objs   fastpathObjects
	links  []link.Link
	losses *instrument.Losses
}

// watchMisses makes tb an instrument fault if the tracer missed anything
// from now until tb ends (fastPathTracer.misses).
func (tr *fastPathTracer) watchMisses(tb testing.TB) {
	before, _, err := tr.misses()
	if err != nil {
		observe.Fault(tb, feature.Environment, "%v", err)
	}
	tb.Cleanup(func() {
		after, named, err := tr.misses()
		switch {
		case err != nil:
			observe.Lost(tb, "%v", err)
		case after > before:
			observe.Lost(tb, "bpf/fastpath.c missed %d events (%s): its counts are short", after-before, named)
		}
	})
}

// misses sums, each named, what the tracer missed since it was attached:
// runs of its programs the kernel skipped, hits of its probes the kernel
// missed (instrument.Losses), and calls it could not follow for want of a
// slot.
func (tr *fastPathTracer) misses() (uint64, string, error) {
	lost, err := tr.losses.Since()
	if err != nil {
		return 0, "", err
	}
	c, err := tr.counts()
	if err != nil {
		return 0, "", err
	}
	if c.Unheld > 0 {
		lost["calls without a slot"] = c.Unheld
	}
	n, named := instrument.Sum(lost)
	return n, named, nil
}

func attachFastPath(ifindex int) (*fastPathTracer, error) {
	defer profile.Running(profile.Setup).End()
	spec, err := instrument.Spec("bpf/fastpath.c", loadFastpath)
	if err != nil {
		return nil, err
	}
	if err := spec.Variables[fastpathVarIfindex].Set(uint32(ifindex)); err != nil {
		return nil, fmt.Errorf("set ifindex of the fast path tracer: %w", err)
	}
	tr := &fastPathTracer{}
	if err := spec.LoadAndAssign(&tr.objs, instrument.LoadOptions()); err != nil {
		return nil, fmt.Errorf("load bpf/fastpath.c (kprobes and kretprobes on __netif_schedule and "+
			"netif_tx_wake_queue, tp_btf/softirq_raise; needs BTF): %w", err)
	}
	p := tr.objs.fastpathPrograms
	probes, err := instrument.AttachProbes(
		instrument.Probe{Func: "__netif_schedule", Prog: p.ScheduleEnter},
		instrument.Probe{Func: "__netif_schedule", Prog: p.ScheduleExit, Return: true},
		instrument.Probe{Func: "netif_tx_wake_queue", Prog: p.WakeEnter},
		instrument.Probe{Func: "netif_tx_wake_queue", Prog: p.WakeExit, Return: true})
	if err != nil {
		tr.Close()
		return nil, err
	}
	for _, l := range probes {
		tr.links = append(tr.links, l)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: p.NetTxRaise})
	if err != nil {
		tr.Close()
		return nil, fmt.Errorf("attach %v: %w", p.NetTxRaise, err)
	}
	tr.links = append(tr.links, l)
	progs := []*ebpf.Program{p.ScheduleEnter, p.ScheduleExit, p.WakeEnter, p.WakeExit, p.NetTxRaise}
	if tr.losses, err = instrument.NewLosses(progs, probes); err != nil {
		tr.Close()
		return nil, err
	}
	return tr, nil
}

// callClass is one kind of call's tally, as bpf/fastpath.c's struct class.
type callClass struct {
	_          structs.HostLayout
	Calls      uint64
	Candidates uint64
	Over       uint64
	Emptied    uint64
	Declined   uint64
	Contested  uint64
}

func (k callClass) String() string {
	return fmt.Sprintf("%d calls, %d with defer_list holding a frame and SCHED clear: "+
		"%d declined, %d scheduled over the list, %d scheduled after it emptied, %d contested",
		k.Calls, k.Candidates, k.Declined, k.Over, k.Emptied, k.Contested)
}

// fastPathCounts is the tracer's tally summed over CPUs.
type fastPathCounts struct {
	// Locked are __netif_schedule() calls of the qdisc lock holder, Wake
	// the wake-ups of the stopped queue.
	Locked, Wake callClass
	// Raises counts every NET_TX raise; Unheld the calls on the qdisc the
	// tracer could not follow (misses counts them). Unread are the frames
	// at the list's head the tracer could not identify in a lock holder's
	// call, Deep its walks of the list cut short: both leave calls
	// undecided, and the test wants none. Vanished are such frames in
	// wake-ups, which hold no lock: the frame left the list under the
	// read, and the call, like an emptied one, says nothing.
	Raises, Unheld, Unread, Deep, Vanished uint64
}

// counts sums the programs' counters over all CPUs.
func (tr *fastPathTracer) counts() (fastPathCounts, error) {
	c, err := instrument.SumCPUs[fastpathCounts](tr.objs.Counts)
	if err != nil {
		return fastPathCounts{}, fmt.Errorf("read fast path counters: %w", err)
	}
	return fastPathCounts{
		Locked: callClass(c.Locked), Wake: callClass(c.Wake),
		Raises: c.Raises, Unheld: c.Unheld, Unread: c.Unread, Deep: c.Deep, Vanished: c.Vanished,
	}, nil
}

func (tr *fastPathTracer) Close() error {
	var errs []error
	for _, l := range tr.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(append(errs, tr.objs.Close())...)
}

// over, declined and emptied add up both kinds of call.
func (c fastPathCounts) over() uint64     { return c.Locked.Over + c.Wake.Over }
func (c fastPathCounts) declined() uint64 { return c.Locked.Declined + c.Wake.Declined }

// decided counts the calls that say whether the fast path is there.
func (c fastPathCounts) decided() uint64 { return c.over() + c.declined() }

func (c fastPathCounts) String() string {
	return fmt.Sprintf("qdisc lock holder: %v; wake-ups: %v; NET_TX raises %d; frames unread %d, list walks cut %d, "+
		"frames gone under a wake-up's read %d", c.Locked, c.Wake, c.Raises, c.Unread, c.Deep, c.Vanished)
}
