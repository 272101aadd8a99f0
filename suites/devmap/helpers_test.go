package devmap

import (
	"context"
	"testing"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/counters"

	"github.com/vishvananda/netlink"
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

// ifindex is a link's index as the programs see it.
func ifindex(l netlink.Link) uint32 { return uint32(l.Attrs().Index) }

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

// settle waits until every frame the main program redirected is accounted
// for at the sinks or as an xdp_devmap_xmit drop, and returns the ledger:
//
//	sent (redirected) = received at the sinks + dropped at flush (xdp_devmap_xmit)
//
// Nothing stays queued: every batch ends with a flush.
func settle(ctx context.Context, t *testing.T, r *Rig, sent uint64) (counters.Accounting, FlushTotals) {
	t.Helper()
	var tot FlushTotals
	get := func() (counters.Accounting, error) {
		tot = r.Totals(t)
		return counters.Accounting{Sent: sent, Received: r.ReceivedAll(t), DeviceDrops: tot.Drops}, nil
	}
	a, err := counters.WaitFor(ctx, 5*time.Second, get, counters.Accounting.Balanced)
	if err != nil {
		t.Errorf("frames unaccounted for (device drops = dropped at flush, per xdp_devmap_xmit; %v): %v", tot, err)
	}
	return a, tot
}
