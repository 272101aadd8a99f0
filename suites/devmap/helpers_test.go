package devmap

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// testTimeout bounds one test when go test sets no deadline.
const testTimeout = 60 * time.Second

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

// eachDriver runs fn as one subtest per driver, each with a fresh rig.
func eachDriver(t *testing.T, trace bool, fn func(t *testing.T, r *Rig, d Driver)) {
	for _, dv := range Drivers {
		t.Run(dv.Name, func(t *testing.T) {
			r := NewRig(t, trace)
			fn(t, r, dv.New(t, r))
		})
	}
}

// onlyD keeps the D runs of a sequence.
func onlyD(runs []Run) []Run {
	var out []Run
	for _, r := range runs {
		if r.Kind == 'D' {
			out = append(out, r)
		}
	}
	return out
}

// Ledger is what settle read: the accounting of the frames the main
// program redirected, with where its terms come from.
type Ledger struct {
	counters.Accounting
	// Flush sums xdp_devmap_xmit: DeviceDrops are its drops.
	Flush FlushTotals
	// Foreign frames are among Received: they reached a sink but were no
	// xmitcheck frames any more (their Ethernet header was not ours).
	Foreign uint64
}

func (l Ledger) String() string {
	return fmt.Sprintf("%v (received at the sinks, %d of them foreign; device drops = dropped at flush, per %v)", l.Accounting, l.Foreign, l.Flush)
}

// settle waits until every frame the main program redirected is accounted
// for at the sinks or as an xdp_devmap_xmit drop, and returns the ledger:
//
//	sent (redirected) = received at the sinks + dropped at flush (xdp_devmap_xmit)
//
// Nothing stays queued: every batch ends with a flush.
func settle(ctx context.Context, t *testing.T, r *Rig, sent uint64) Ledger {
	t.Helper()
	return settleUncounted(ctx, t, r, sent, 0, "")
}

// settleUncounted is settle for frames of which uncounted were freed where
// neither a sink nor xdp_devmap_xmit sees them (why says where, and where
// the number comes from).
func settleUncounted(ctx context.Context, t *testing.T, r *Rig, sent, uncounted uint64, why string) Ledger {
	t.Helper()
	get := func() (Ledger, error) {
		l := Ledger{Flush: r.Totals(t), Foreign: r.ForeignAll(t)}
		l.Accounting = counters.Accounting{Sent: sent, Received: r.ReceivedAll(t) + l.Foreign, DeviceDrops: l.Flush.Drops, Uncounted: uncounted, UncountedWhy: why}
		return l, nil
	}
	l, err := counters.WaitFor(ctx, 5*time.Second, get, func(l Ledger) bool { return l.Balanced() })
	if err != nil {
		t.Errorf("frames unaccounted for: %v", err)
	}
	return l
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
	feature.Absent(t, feature.Seed004, observed)
}

// dropRuns counts the D runs whose program returned XDP_DROP.
func dropRuns(runs []bpfRun) uint64 {
	var n uint64
	for _, r := range runs {
		if r.Kind == 'D' && r.Verdict == xdpDrop {
			n++
		}
	}
	return n
}
