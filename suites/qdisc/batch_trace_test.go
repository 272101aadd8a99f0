package qdisc

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// batchTracer runs bpf/batch.c on one device's root qdisc: how many frames
// each __dev_queue_xmit() call enqueued there.
type batchTracer struct {
	objs   batchObjects
	links  []link.Link
	losses *instrument.Losses
}

// traceBatches attaches bpf/batch.c to the root qdisc of ifindex until tb
// ends: one that cannot attach is a fault (the harness's or the
// environment's), one that missed an event or lost track of a call an
// instrument fault.
func traceBatches(tb testing.TB, ifindex int) *batchTracer {
	tb.Helper()
	tr, err := attachBatches(ifindex)
	if err != nil {
		observe.Fault(tb, instrument.Cause(err), "%v", err)
	}
	tb.Cleanup(func() { tr.Close() })
	instrument.WatchLosses(tb, "bpf/batch.c", tr.losses)
	tb.Cleanup(func() {
		if c, err := tr.counts(); err == nil && c.Unheld+c.Stale > 0 {
			observe.Lost(tb, "bpf/batch.c lost track of calls (%d enqueues with no slot for their call, %d calls "+
				"into a slot already taken, nested or left by a missed return): its batches are wrong", c.Unheld, c.Stale)
		}
	})
	return tr
}

func attachBatches(ifindex int) (*batchTracer, error) {
	defer profile.Running(profile.Setup).End()
	spec, err := instrument.Spec("bpf/batch.c", loadBatch)
	if err != nil {
		return nil, err
	}
	if err := spec.Variables[batchVarIfindex].Set(uint32(ifindex)); err != nil {
		return nil, fmt.Errorf("set ifindex of the batch tracer: %w", err)
	}
	tr := &batchTracer{}
	if err := spec.LoadAndAssign(&tr.objs, instrument.LoadOptions()); err != nil {
		return nil, fmt.Errorf("load bpf/batch.c (kprobe and kretprobe on __dev_queue_xmit, "+
			"tp_btf/qdisc_enqueue; needs BTF): %w", err)
	}
	p := tr.objs.batchPrograms
	// The return first: a call entered before it would leave a slot no
	// return empties.
	probes, err := instrument.AttachProbes(
		instrument.Probe{Func: "__dev_queue_xmit", Prog: p.XmitExit, Return: true},
		instrument.Probe{Func: "__dev_queue_xmit", Prog: p.XmitEnter})
	if err != nil {
		tr.Close()
		return nil, err
	}
	for _, l := range probes {
		tr.links = append(tr.links, l)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: p.Enqueue})
	if err != nil {
		tr.Close()
		return nil, fmt.Errorf("attach %v: %w", p.Enqueue, err)
	}
	tr.links = append(tr.links, l)
	if tr.losses, err = instrument.NewLosses([]*ebpf.Program{p.XmitEnter, p.XmitExit, p.Enqueue}, probes); err != nil {
		tr.Close()
		return nil, err
	}
	return tr, nil
}

func (tr *batchTracer) Close() error {
	var errs []error
	for _, l := range tr.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(append(errs, tr.objs.Close())...)
}

// batchTally is the tracer's tally summed over CPUs, as bpf/batch.c's
// struct counts: Size[n] calls enqueued n frames (Size[len-1]: that many
// or more).
type batchTally struct {
	Calls                   uint64
	Size                    [9]uint64
	Unheld, Enqueues, Stale uint64
}

// batches counts the calls that enqueued two frames or more: an owner's
// batch of defer_list.
func (c batchTally) batches() uint64 {
	var n uint64
	for _, v := range c.Size[2:] {
		n += v
	}
	return n
}

func (c batchTally) sub(o batchTally) batchTally {
	d := batchTally{Calls: c.Calls - o.Calls, Unheld: c.Unheld - o.Unheld, Enqueues: c.Enqueues - o.Enqueues,
		Stale: c.Stale - o.Stale}
	for i := range c.Size {
		d.Size[i] = c.Size[i] - o.Size[i]
	}
	return d
}

func (c batchTally) String() string {
	var sizes []string
	for i, v := range c.Size[1:] {
		if v > 0 {
			plus := ""
			if i+1 == len(c.Size)-1 {
				plus = "+"
			}
			sizes = append(sizes, fmt.Sprintf("%d×%d%s", v, i+1, plus))
		}
	}
	return fmt.Sprintf("%d frames enqueued by %d calls (%s), %d batches of 2 or more",
		c.Enqueues, c.Calls, strings.Join(sizes, " "), c.batches())
}

// counts sums the programs' counters over all CPUs.
func (tr *batchTracer) counts() (batchTally, error) {
	c, err := instrument.SumCPUs[batchCounts](tr.objs.Counts)
	if err != nil {
		return batchTally{}, fmt.Errorf("read the batch counters: %w", err)
	}
	return batchTally{Calls: c.Calls, Size: c.Size, Unheld: c.Unheld, Enqueues: c.Enqueues, Stale: c.Stale}, nil
}

// resetLast forgets the last call's size, before a burst.
func (tr *batchTracer) resetLast() error {
	if err := tr.objs.Last.Put(uint32(0), uint64(0)); err != nil {
		return fmt.Errorf("reset the last batch: %w", err)
	}
	return nil
}

// last is the size of the last call that enqueued on the device since
// resetLast (0: none did).
func (tr *batchTracer) last() (uint64, error) {
	var n uint64
	if err := tr.objs.Last.Lookup(uint32(0), &n); err != nil {
		return 0, fmt.Errorf("read the last batch: %w", err)
	}
	return n, nil
}
