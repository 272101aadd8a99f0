package taprace

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpus"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/tunwake"
)

// Detach races seed 000's owner check: __tun_wake_queue() wakes a subqueue
// only for the queue file that owns its slot. A two-queue tap under traffic
// on both queues, a consumer on each queue file, and a thread that detaches
// and re-attaches the file at slot 0 (so the other one moves in) as fast as
// it can (tuntap.RaceSlots); bpf/owner.c (internal/guest/tunwake) must see
// no wake inside a call from a file without its slot. Afterwards, both
// files attached, every queue drains and every frame is taken, freed once
// (counted on kfree_skb) or still queued.
type Detach struct {
	Seed feature.Seed
	// Who asks for the wakes the race makes stale, in the verdict's words:
	// "a file", "vhost on a file".
	Who string
	// For is how long a try moves queues under traffic.
	For time.Duration
	// Tries is how many tries may run, each on a new rig, until one whose
	// owner tracer missed nothing judges; the last is judged, losses and all.
	Tries int
	// Limit bounds each wait.
	Limit time.Duration
	// New builds a try's rig, kept until t ends.
	New func(t *testing.T) DetachTap
	// Calls is how many calls of __tun_wake_queue() the consumers made at
	// least, having taken got frames.
	Calls func(got uint64) uint64
}

// DetachTap is one try's rig: a two-queue tap in a namespace.
type DetachTap struct {
	NS, Ifindex int // the namespace (a file descriptor) and the tap
	Queues      [2]*tuntap.Device
	Senders     []*traffic.Sender
	Freed       *dropmon.Freed
	// Consume starts a consumer of queue file q on cpu.
	Consume func(q, cpu int) Consumer
	// Read reads the tap's and its qdisc's counters.
	Read func() (Counted, error)
}

// Run races d in t.
func (d Detach) Run(t *testing.T) {
	t.Helper()
	// A P for each sender, each consumer, the toggler and this goroutine.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 6)))
	// Tries run in t itself, not as subtests: a void try is no test of its
	// own, and a soak would call a subtest that only some rounds ran flaky.
	for try := 1; d.try(t, try == d.Tries); try++ {
		t.Logf("try %d of %d void: again on a new rig", try, d.Tries)
	}
}

// detachLook is one look at the tap during a try.
type detachLook struct {
	Counted
	freed dropmon.FreedCount
	got   uint64
}

func (l detachLook) String() string { return l.State.String() }

// try is one try on a rig of its own. A try whose tracer missed events is
// void (it returns true) unless it is the last; what it did to the frames
// is judged all the same.
func (d Detach) try(t *testing.T, lastTry bool) (void bool) {
	t.Helper()
	m := d.New(t)
	owners := tunwake.TraceOwners(t, m.NS, m.Ifindex)
	all, err := cpus.Allowed()
	assert.NilError(t, err)
	var consumers [2]Consumer
	for i := range consumers {
		consumers[i] = m.Consume(i, all[(i+1)*(len(all)-1)%len(all)])
	}

	ctx, cancel := context.WithTimeout(t.Context(), d.For)
	defer cancel()
	var sent atomic.Uint64
	var work []func(context.Context) error
	for _, s := range m.Senders {
		work = append(work, func(ctx context.Context) error { return traffic.SendUntil(ctx, s, &sent) })
	}
	cycles, err := tuntap.RaceSlots(ctx, m.Queues, d.Limit, work...)
	assert.NilError(t, err)

	ledger := func(l detachLook) counters.Accounting {
		a := l.Ledger
		a.Sent, a.Received = sent.Load(), l.got
		return dropmon.BookFreed(a, l.freed,
			"rings purged at detach, txq 1's qdisc reset with one queue left, QDISC_BURST_DROP")
	}
	look := func() (detachLook, error) {
		c, err := m.Read()
		if err != nil {
			return detachLook{}, err
		}
		f, err := m.Freed.Count()
		return detachLook{c, f, consumers[0].Got() + consumers[1].Got()}, err
	}
	last, werr := counters.WaitFor(context.Background(), d.Limit, look, func(l detachLook) bool {
		return l.Ledger.QdiscBacklog == 0 && ledger(l).Balanced()
	})
	last.got = 0
	for _, c := range consumers {
		n, err := c.Stop()
		assert.NilError(t, err)
		last.got += n
	}
	l := ledger(last)
	t.Logf("%d detach and attach cycles in %v; %v; %v", cycles, d.For, last.freed, l)
	assert.NilError(t, werr, "every queue drained and every frame accounted after the race; %v", l)
	dropmon.CheckFreed(t, l, last.freed)
	assert.Assert(t, l.Balanced(), "%v", l)
	if why, v := owners.Void(); v && !lastTry && !t.Failed() {
		t.Logf("%s: the owner check cannot be judged", why)
		return true
	}
	c := tunwake.CheckOwners(t, owners, d.Calls(last.got))
	if c.Stale > 0 && !t.Failed() {
		observe.Shows(t, d.Seed, fmt.Sprintf(
			"queue detach raced: %d wakes asked for by %s without its slot, none woke the subqueue", c.Stale, d.Who))
	}
	return false
}
