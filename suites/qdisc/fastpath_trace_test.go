package qdisc

import (
	"errors"
	"fmt"
	"strings"
	"structs"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// fastPathTracer runs bpf/fastpath.c on one device's root qdisc.
type fastPathTracer struct {
	objs  fastpathObjects
	links []link.Link
}

// watchMisses makes tb an instrument fault if the kernel skipped any of
// the tracer's programs (instrument.WatchMisses).
func (tr *fastPathTracer) watchMisses(tb testing.TB) {
	for _, prog := range tr.programs() {
		instrument.WatchMisses(tb, "bpf/fastpath.c's "+prog.String(), prog)
	}
}

func (tr *fastPathTracer) programs() []*ebpf.Program {
	p := tr.objs.fastpathPrograms
	return []*ebpf.Program{p.ScheduleEnter, p.ScheduleExit, p.WakeEnter, p.WakeExit, p.NetTxRaise}
}

// misses sums the recursion misses of the tracer's programs, each named:
// the runs the kernel skipped.
func (tr *fastPathTracer) misses() (uint64, string, error) {
	var n uint64
	var named []string
	for _, prog := range tr.programs() {
		m, err := instrument.Misses(prog)
		if err != nil {
			return 0, "", err
		}
		if m > 0 {
			n += m
			named = append(named, fmt.Sprintf("%v %d", prog, m))
		}
	}
	return n, strings.Join(named, ", "), nil
}

func attachFastPath(ifindex int) (*fastPathTracer, error) {
	defer profile.Running(profile.Setup).End()
	spec, err := loadFastpath()
	if err != nil {
		return nil, err
	}
	if err := spec.Variables[fastpathVarIfindex].Set(uint32(ifindex)); err != nil {
		return nil, fmt.Errorf("set ifindex of the fast path tracer: %w", err)
	}
	tr := &fastPathTracer{}
	if err := spec.LoadAndAssign(&tr.objs, nil); err != nil {
		return nil, fmt.Errorf("load bpf/fastpath.c (fentry/fexit on __netif_schedule and netif_tx_wake_queue, "+
			"tp_btf/softirq_raise; needs BTF): %w", err)
	}
	p := tr.objs.fastpathPrograms
	for _, prog := range []*ebpf.Program{p.ScheduleEnter, p.ScheduleExit, p.WakeEnter, p.WakeExit, p.NetTxRaise} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			tr.Close()
			return nil, fmt.Errorf("attach %v: %w", prog, err)
		}
		tr.links = append(tr.links, l)
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

func (k *callClass) add(o callClass) {
	k.Calls += o.Calls
	k.Candidates += o.Candidates
	k.Over += o.Over
	k.Emptied += o.Emptied
	k.Declined += o.Declined
	k.Contested += o.Contested
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
	// Raises counts every NET_TX raise; Unread the frames at the list's
	// head the tracer could not identify in a lock holder's call, Deep its
	// walks of the list cut short: both leave calls undecided, and the
	// test wants none. Vanished are such frames in wake-ups, which hold no
	// lock: the frame left the list under the read, and the call, like an
	// emptied one, says nothing.
	Raises, Unread, Deep, Vanished uint64
}

// counts sums the programs' counters over all CPUs.
func (tr *fastPathTracer) counts() (fastPathCounts, error) {
	var per []fastpathCounts
	if err := tr.objs.Counts.Lookup(uint32(0), &per); err != nil {
		return fastPathCounts{}, fmt.Errorf("read fast path counters: %w", err)
	}
	var sum fastPathCounts
	for _, c := range per {
		sum.Locked.add(callClass(c.Locked))
		sum.Wake.add(callClass(c.Wake))
		sum.Raises += c.Raises
		sum.Unread += c.Unread
		sum.Deep += c.Deep
		sum.Vanished += c.Vanished
	}
	return sum, nil
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
