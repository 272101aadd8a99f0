package devmap

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// testTimeout bounds one test when go test sets no deadline.
const testTimeout = 60 * time.Second

// maxPoll is the most frames one poll takes: veth's NAPI weight
// (NAPI_POLL_WEIGHT), and the largest batch the tests give the live-frames
// runner.
const maxPoll = 64

// withDeadline returns a context that ends before tb's deadline.
func withDeadline(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	if t, ok := tb.(*testing.T); ok {
		if d, ok := t.Deadline(); ok {
			cancel()
			ctx, cancel = context.WithDeadline(context.Background(), d.Add(-5*time.Second))
		}
	}
	tb.Cleanup(cancel)
	return ctx
}

// eachDriver runs fn as one subtest per driver, each with the driver's
// rig (rigFor), traced.
func eachDriver(t *testing.T, fn func(t *testing.T, r *rig, d driver)) {
	for _, dv := range drivers {
		t.Run(dv.name, func(t *testing.T) {
			r, d := rigFor(t, dv)
			fn(t, r, d)
		})
	}
}

// ledger is what settle read: the accounting of the frames the main
// program redirected, with where its terms come from.
type ledger struct {
	counters.Accounting
	// flush sums xdp_devmap_xmit: DeviceDrops are its drops.
	flush flushTotals
	// foreign frames are among Received: they reached a sink but were no
	// xmitcheck frames any more (their Ethernet header was not ours).
	foreign uint64
}

func (l ledger) String() string {
	return fmt.Sprintf("%v (received at the sinks, %d of them foreign; device drops = dropped at flush, per %v)",
		l.Accounting, l.foreign, l.flush)
}

// settle waits until every frame the main program redirected is accounted
// for at the sinks or as an xdp_devmap_xmit drop, and returns the ledger:
//
//	sent (redirected) = received at the sinks + dropped at flush (xdp_devmap_xmit)
//
// Nothing stays queued: every poll ends with a flush.
func settle(ctx context.Context, t *testing.T, r *rig, sent uint64) ledger {
	t.Helper()
	return settleUncounted(ctx, t, r, sent, 0, "")
}

// settleUncounted is settle for frames of which uncounted were freed where
// neither a sink nor xdp_devmap_xmit sees them (why says where, and where
// the number comes from).
func settleUncounted(ctx context.Context, t *testing.T, r *rig, sent, uncounted uint64, why string) ledger {
	t.Helper()
	get := func() (ledger, error) {
		l := ledger{flush: r.totals(t), foreign: r.foreignAll(t)}
		l.Accounting = counters.Accounting{
			Sent:         sent,
			Received:     r.receivedAll(t) + l.foreign,
			DeviceDrops:  l.flush.drops,
			Uncounted:    uncounted,
			UncountedWhy: why,
		}
		return l, nil
	}
	done := func(l ledger) bool { return l.Balanced() && flushesSeen(r, l) }
	l, err := counters.WaitFor(ctx, 5*time.Second, get, done)
	switch {
	case err != nil && !l.Balanced():
		t.Errorf("frames unaccounted for: %v", err)
	case err != nil:
		observe.Lost(t, "the xdp_devmap_xmit counter saw %d frames sent at flush, the sinks received %d of ours: "+
			"it missed flushes; %v", l.flush.sent, l.Received-l.foreign, l)
	}
	return l
}

// flushesSeen holds the xdp_devmap_xmit counter to the sinks: on the
// native path our frames reach a sink only through a flush, which reports
// them in its sent, so once the counter caught up the sinks cannot have
// received more of them than it saw sent. It catches up late: bq_xmit_all
// fires the tracepoint after ndo_xdp_xmit returned, and the peer's NAPI
// (a thread of its own with threaded NAPI, which on PREEMPT_RT can even
// preempt the flushing one) may count the frames at the sink first; so
// settle waits for it. One that never catches up missed flushes (a
// recursion miss the kernel did not count, a log that wrapped): an
// instrument fault, whatever the model would make of the events.
func flushesSeen(r *rig, l ledger) bool {
	return !r.traced || r.generic || l.Received-l.foreign <= l.flush.sent
}

// before004 reports seed 004 absent: the test observed exactly the
// behaviour from before the seed (what observed says) and nothing else went
// wrong. A check that failed before means another deviation: the test fails
// plainly, and the runner calls the seed BROKEN.
func before004(t *testing.T, observed string) {
	t.Helper()
	if t.Failed() {
		t.Fatalf("%s, but other checks failed above: not the behaviour from before seed 004", observed)
	}
	observe.Absent(t, feature.Seed004, observed)
}

// sequence is the events a test logged, judged against the models.
type sequence struct {
	got []event
	order
}

// judge explains got: on the generic path exactly the at-once sequence; on
// the native path a partition into polls at flush time (the driver's own,
// where it decides them), else at enqueue time (seed 004 absent).
func judge(d driver, got []event, tr load, entries map[uint32]entry, batch int) sequence {
	s := sequence{got: got}
	if d.when() == atOnce {
		if _, err := explain(got, tr, entries, atOnce); err != nil {
			s.err = err
		}
		return s
	}
	s.order = classify(got, tr, entries)
	if want := d.polls(tr.frames, batch); s.polls != nil && want != nil && !slices.Equal(s.polls, want) {
		s.err = fmt.Errorf("%s in polls of %v, want the driver's %v", atFlush, s.polls, want)
	}
	return s
}

// report ends the judgement, after every other check of the test: a
// sequence nothing explains fails it; exactly the enqueue-time sequence
// reports seed 004 absent (what else the test saw then in also); a
// flush-time sequence that enqueueing could not have produced shows seed
// 004.
func (s sequence) report(t *testing.T, also string) {
	t.Helper()
	t.Logf("events (notation_test.go): %s", format(s.got))
	switch {
	case s.err != nil:
		t.Fatalf("run order %s: %v", shape(s.got), s.err)
	case s.enqueue:
		before004(t, fmt.Sprintf("devmap program ran at enqueue time: "+
			"each frame's D run right after its M run, before its queue's flush (%s)%s", counts(s.got), also))
	case s.shows:
		observe.Shows(t, feature.Seed004,
			fmt.Sprintf("the devmap programs ran at flush: %s, polls of %v frames", shape(s.got), s.polls))
	}
}

// counts sums a sequence by kind: "64 M runs, 64 D runs, 4 flushes".
func counts(evs []event) string {
	n := map[byte]int{}
	for _, e := range evs {
		n[e.kind]++
	}
	return fmt.Sprintf("%d M runs, %d D runs, %d flushes", n['M'], n['D'], n['F'])
}
