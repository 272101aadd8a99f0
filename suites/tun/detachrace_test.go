package tun

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

const (
	// detachRaceFor is how long TestDetachRace moves queues under traffic.
	detachRaceFor = time.Second
	// detachRaceTries is how many races may run, each on a new rig, until
	// one whose owner tracer missed nothing judges (its fentry programs,
	// before the kprobes, were skipped on PREEMPT_RT in 1 of 2 CI
	// rehearsals); the last is judged, losses and all.
	detachRaceTries = 3
)

// TestDetachRace races seed 000's owner check: __tun_wake_queue() wakes a
// subqueue only for the queue file that owns its slot. A file detached with
// TUNSETQUEUE keeps its ring, its index and its tap until __tun_detach()
// purges the ring after synchronize_net(), and a reader of it consumes
// meanwhile; the slot already belongs to the file moved into it, whose ring
// may be full. A two-queue tap under traffic on both queues, a polling
// reader on each file, and a third thread that detaches and re-attaches the
// file at slot 0 (so the other one moves in) as fast as it can.
// bpf/owner.c (internal/guest/tunwake) counts the calls from a file without
// its slot and must see no wake inside one. Afterwards, both files
// attached, every queue drains (none stays stopped) and every frame is read,
// freed once (tun's and the qdisc's drops, the rings purged at detach, the
// second qdisc reset while one queue remained, counted on kfree_skb) or
// still queued. Frames may change readers as the slots move, so a stream's
// order is not held here.
func TestDetachRace(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	// A P for each sender, each reader, the toggler and this goroutine.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 6)))
	// Tries run in t itself, not as subtests: a void try is no test of its
	// own, and a soak would call a subtest that only some rounds ran flaky.
	for try := 1; detachRace(t, try == detachRaceTries); try++ {
		t.Logf("try %d of %d void: again on a new rig", try, detachRaceTries)
	}
}

// detachRace is one try of TestDetachRace on a rig of its own (kept until
// t ends). A try whose tracer missed events is void (it returns true)
// unless it is the last; what it did to the frames is judged all the same.
func detachRace(t *testing.T, lastTry bool) (void bool) {
	o := tapOpts{ring: 8, limit: 1000, flags: tuntap.IFFBackpressure}
	m := newMQTap(t, o)
	freed := m.freed(t)
	owners := tunwake.TraceOwners(t, int(m.e.NS), m.ifindex)
	all, err := cpus.Allowed()
	assert.NilError(t, err)
	var readers [2]*poller
	for i := range readers {
		readers[i] = startPoller(t, m.q[i].File, all[(i+1)*(len(all)-1)%len(all)])
	}
	senders := []*traffic.Sender{m.sender(t, 0), m.sender(t, 1)}

	ctx, cancel := context.WithTimeout(t.Context(), detachRaceFor)
	defer cancel()
	var sent atomic.Uint64
	var work []func(context.Context) error
	for _, s := range senders {
		work = append(work, func(ctx context.Context) error { return traffic.SendUntil(ctx, s, &sent) })
	}
	cycles, err := tuntap.RaceSlots(ctx, m.q, waitLimit, work...)
	assert.NilError(t, err)

	read := func() uint64 { return readers[0].r.Total() + readers[1].r.Total() }
	ledger := func(l detachLook) counters.Accounting {
		return dropmon.BookFreed(account(sent.Load(), int(l.read), l.state, 0), l.freed,
			"rings purged at detach, txq 1's qdisc reset with one queue left, QDISC_BURST_DROP")
	}
	look := func() (detachLook, error) {
		st, err := m.state()
		if err != nil {
			return detachLook{}, err
		}
		f, err := freed.Count()
		return detachLook{st, f, read()}, err
	}
	last, werr := counters.WaitFor(context.Background(), waitLimit, look, func(l detachLook) bool {
		return l.Q.Qlen == 0 && ledger(l).Balanced()
	})
	for _, r := range readers {
		assert.NilError(t, r.close())
	}
	last.read = read()
	l := ledger(last)
	t.Logf("%d detach and attach cycles in %v; %v; %v", cycles, detachRaceFor, last.freed, l)
	assert.NilError(t, werr, "every queue drained and every frame accounted after the race; %v", l)
	dropmon.CheckFreed(t, l, last.freed)
	assert.Assert(t, l.Balanced(), "%v", l)
	if why, v := owners.Void(); v && !lastTry && !t.Failed() {
		t.Logf("%s: the owner check cannot be judged", why)
		return true
	}
	c := tunwake.CheckOwners(t, owners, last.read)
	if c.Stale > 0 && !t.Failed() {
		observe.Shows(t, feature.Seed000Tun, fmt.Sprintf(
			"queue detach raced: %d wakes asked for by a file without its slot, none woke the subqueue", c.Stale))
	}
	return false
}

// detachLook is one look at TestDetachRace's tap.
type detachLook struct {
	state
	freed dropmon.FreedCount
	read  uint64
}
