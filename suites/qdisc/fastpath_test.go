package qdisc

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
)

const (
	// fastPathWant is how many calls that found q->defer_list non-empty
	// with SCHED clear TestFastPath must see: each of them schedules the
	// qdisc on a kernel without the fast path, so fewer would prove
	// little.
	fastPathWant = 300
	// fastPathHardStop bounds the load that must produce them: the
	// longest it took in a 10-round soak of debian:7.3 under a kernel
	// build on both CPUs was 45.9 s (the margin report), 4 to 30 s
	// unloaded.
	fastPathHardStop = 2 * time.Minute
)

// TestFastPath observes seed 003 itself: while N senders contend for a
// locked qdisc (pfifo) on a veth whose peer's NAPI poll stops and wakes the
// queue, __netif_schedule() is called (by the qdisc lock holder requeueing a
// frame the full device refused, by __qdisc_run() out of quota, by the
// wake-up) while other senders wait in __dev_xmit_skb() with their frames on
// q->defer_list. With the fast path such a call returns at once; without it,
// it sets SCHED and raises NET_TX_SOFTIRQ. BPF (bpf/fastpath.c) counts the
// calls that found defer_list non-empty and SCHED clear until there are
// fastPathWant, and those that scheduled the qdisc all the same: there must
// be none. A kernel without defer_list skips through the probe.
func TestFastPath(t *testing.T) {
	feature.Of(t, feature.Seed003)
	feature.Require(t, probeDeferList())
	n := 2 * runtime.NumCPU()
	t.Run(fmt.Sprintf("%s/pfifo/senders=%d", vethFast.name, n), func(t *testing.T) {
		r := vethFast.rig(t, "pfifo")
		tr := traceFastPath(t, r.dev.Attrs().Index)
		base, err := r.state()
		assert.NilError(t, err)
		runs0, err := netTxRuns()
		assert.NilError(t, err)

		start := time.Now()
		l := startLoad(t, r, loadOpts{senders: n, duration: fastPathHardStop})
		_, enough := counters.WaitFor(testContext(t), fastPathHardStop, tr.counts, func(c fastpathCounts) bool {
			return c.Unscheduled >= fastPathWant
		})
		handed, err := l.stop()
		elapsed := time.Since(start)
		assert.NilError(t, err)
		s, stranded := r.settle(testContext(t), handed, l.lo, l.hi, base)
		c, err := tr.counts()
		assert.NilError(t, err)
		runs1, err := netTxRuns()
		assert.NilError(t, err)

		// No allowance: 0 in each of 12 runs on debian:7.3, 8 on
		// debian:7.2 and 2 on a 7.3.4 built from source (200 to 1000
		// such calls each), where 2–18% of them scheduled the qdisc after
		// the list's head changed (counted apart, see bpf/fastpath.c).
		// The same build with the seed's hunk reverted: 275 to 293 of
		// 300, in 5 runs. A head judged by its address alone let 1 of
		// 300 through on debian:7.3 in a soak under load (the skb freed
		// and its memory reused at the head); the frame it carries now
		// identifies it.
		assert.Assert(t, c.Unread == 0, "the tracer could not read the frame at defer_list's head: it cannot tell a reused skb from the same one; %v", c)
		if c.Despite > 0 {
			t.Fatalf("%d of %d calls of __netif_schedule() that found q->defer_list non-empty with SCHED clear scheduled the qdisc anyway (SCHED set, NET_TX raised, the same frame at the list's head): seed 003's fast path is not there; %v; %v",
				c.Despite, c.Unscheduled, c, s)
		}
		assert.NilError(t, stranded, "frames stranded after the senders stopped (lost wake-up?); %v", c)
		assert.NilError(t, enough, "the load made too few calls that found q->defer_list non-empty with SCHED clear in %v (want %d): the test proves nothing; %v; %v", elapsed.Round(time.Millisecond), fastPathWant, c, s)
		feature.Shows(t, feature.Seed003, fmt.Sprintf("%d calls of __netif_schedule() found q->defer_list non-empty with SCHED clear, none scheduled the qdisc", c.Unscheduled))
		perPkt := func(d uint64) float64 { return float64(d) / float64(max(s.a.Received, 1)) }
		t.Logf("%v, %d senders: %v; per delivered packet: %.3f NET_TX raises, %.3f NET_TX runs; %v",
			elapsed.Round(time.Millisecond), n, c, perPkt(c.Raises), perPkt(runs1-runs0), s)
	})
}

// fastPathTracer runs bpf/fastpath.c on one device's root qdisc.
type fastPathTracer struct {
	objs  fastpathObjects
	links []link.Link
}

// traceFastPath loads and attaches the fast path programs for the device
// with ifindex in the test's namespace (the programs do not look at the
// namespace: no other device in the guest has traffic); they stay until the
// test ends.
func traceFastPath(tb testing.TB, ifindex int) *fastPathTracer {
	tb.Helper()
	tr, err := attachFastPath(ifindex)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tr.Close() })
	return tr
}

func attachFastPath(ifindex int) (*fastPathTracer, error) {
	spec, err := loadFastpath()
	if err != nil {
		return nil, err
	}
	if err := spec.Variables[fastpathVarIfindex].Set(uint32(ifindex)); err != nil {
		return nil, fmt.Errorf("set ifindex of the fast path tracer: %w", err)
	}
	tr := &fastPathTracer{}
	if err := spec.LoadAndAssign(&tr.objs, nil); err != nil {
		return nil, fmt.Errorf("load bpf/fastpath.c (fentry/fexit on __netif_schedule and netif_tx_wake_queue, tp_btf/softirq_raise; needs BTF): %w", err)
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

// counts sums the programs' counters over all CPUs.
func (tr *fastPathTracer) counts() (fastpathCounts, error) {
	var per []fastpathCounts
	if err := tr.objs.Counts.Lookup(uint32(0), &per); err != nil {
		return fastpathCounts{}, fmt.Errorf("read fast path counters: %w", err)
	}
	var sum fastpathCounts
	for _, c := range per {
		sum.Calls += c.Calls
		sum.Wakes += c.Wakes
		sum.Nonempty += c.Nonempty
		sum.NonemptyWakes += c.NonemptyWakes
		sum.Unscheduled += c.Unscheduled
		sum.Scheduled += c.Scheduled
		sum.Despite += c.Despite
		sum.Changed += c.Changed
		sum.Raises += c.Raises
		sum.Unread += c.Unread
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

func (c fastpathCounts) String() string {
	return fmt.Sprintf("calls %d (%d via netif_tx_wake_queue), defer_list non-empty at entry %d (%d via netif_tx_wake_queue; SCHED clear %d); scheduled %d, of them with defer_list non-empty %d (same frame at the head at the raise) + %d (head changed); NET_TX raises %d; frames unread %d",
		c.Calls, c.Wakes, c.Nonempty, c.NonemptyWakes, c.Unscheduled, c.Scheduled, c.Despite, c.Changed, c.Raises, c.Unread)
}
