package dropmon

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// Freed counts, from its start, the frames of the suites' ethertype the
// kernel frees with kfree_skb, every drop reason together: a device's and
// its qdisc's drops, and what a teardown frees (a ring purged, a qdisc
// reset, a frame meeting a detached queue). Frames a reader gets are
// consumed (consume_skb), not counted. Where only the test sends frames of
// that ethertype, a frame the device held and nobody freed is missing from
// the count.
//
// It counts with a trace-event histogram (Hist), which misses no event and
// does not read the frame's device, so a frame freed after its device (a
// batch vhost-net holds outlives a deleted tap) counts as any other. Only
// on a kernel without hist triggers does it count with a BPF program on
// the device, which PREEMPT_RT can make skip events (Monitor.Misses) and
// which reads skb->dev of such a frame from memory already freed: a reuse
// would show as a frame missing, never as one too many.
type Freed struct {
	count func() (FreedCount, error)
}

// RequireReasons skips tb, naming the probe, on a kernel without drop
// reasons in its BTF (the counter's tracepoint program needs them). The
// probe attaches a counter and detaches it at once, the first time only: its
// answer is the kernel's, the same for every test of the binary, and each
// try cost 1.5 s under the emulator (loading and verifying the program,
// and patching the tracepoint in and out).
func RequireReasons(tb testing.TB) {
	tb.Helper()
	reasonsProbe.once.Do(func() {
		var m *Monitor
		if m, reasonsProbe.err = Attach(Filter{}); reasonsProbe.err == nil {
			m.Close()
		}
	})
	observe.Require(tb, reasonsProbe.err)
}

// reasonsProbe is RequireReasons's probe, made once.
var reasonsProbe struct {
	once sync.Once
	err  error
}

// WatchFreed starts counting the frames of ethertype proto freed, until tb
// ends: on the whole machine with a histogram, or on the device ifindex of
// ns where the kernel has none (tb's log says so).
func WatchFreed(tb testing.TB, ns netns.NsHandle, ifindex int, proto uint16) *Freed {
	tb.Helper()
	h, err := WatchHist(tb, proto)
	if err == nil {
		return &Freed{h.Total}
	}
	tb.Logf("frees counted by a BPF program on kfree_skb, which may miss some on a preemptible kernel: %v", err)
	ino, err := NetnsInode(int(ns))
	assert.NilError(tb, err)
	m, err := Attach(Filter{Ifindex: ifindex, NetnsInode: ino})
	observe.Require(tb, err)
	tb.Cleanup(func() { m.Close() })
	instrument.WatchMisses(tb, "the kfree_skb counter", m.prog)
	return &Freed{func() (FreedCount, error) { return total(m.All()) }}
}

// FreedCount is every frame freed so far, and the counts by reason (the
// values of the kernel's enum skb_drop_reason).
type FreedCount struct {
	N        uint64
	ByReason map[uint32]uint64
}

// total sums counts by reason into a FreedCount.
func total(by map[uint32]uint64, err error) (FreedCount, error) {
	f := FreedCount{ByReason: by}
	for _, v := range by {
		f.N += v
	}
	return f, err
}

func (f FreedCount) String() string {
	return fmt.Sprintf("%d freed with kfree_skb (by enum skb_drop_reason value: %v)", f.N, f.ByReason)
}

// Count reads the count.
func (f *Freed) Count() (FreedCount, error) { return f.count() }

// WaitFor waits, within limit, until want frames were freed and fails tb
// unless exactly want were: the kernel frees some after the step that
// dropped them (in NET_TX, at rtnl_unlock, in vhost's worker). ledger is
// the test's accounting, for the message.
func (f *Freed) WaitFor(tb testing.TB, want uint64, limit time.Duration, ledger fmt.Stringer) {
	tb.Helper()
	got, err := counters.WaitFor(context.Background(), limit, f.Count, func(c FreedCount) bool { return c.N >= want })
	assert.NilError(tb, err, "frames freed, want %d; %v", want, ledger)
	assert.Check(tb, got.N == want,
		"frames freed: %v, want %d (every frame the test did not get, freed exactly once); %v", got, want, ledger)
	tb.Logf("%v", got)
}

// Hold checks, for d, that exactly want frames have been freed and no
// more: what says what must free nothing more.
func (f *Freed) Hold(tb testing.TB, want uint64, d time.Duration, what string, ledger fmt.Stringer) {
	tb.Helper()
	counters.Hold(tb, d, what, func() error {
		got, err := f.Count()
		if err == nil && got.N != want {
			err = fmt.Errorf("frames freed: %v, want %d; %v", got, want, ledger)
		}
		return err
	})
}

// BookFreed books into a's Uncounted the frames freed on kfree_skb (f)
// beyond the drops a's counters already hold, naming why with what: the
// ledger then says sent = received + freed + still queued, for a test
// whose steps free frames no counter sees and whose number it cannot
// know (a race of queue detaches). Frees fewer than the counted drops
// book nothing; CheckFreed fails that.
func BookFreed(a counters.Accounting, f FreedCount, what string) counters.Accounting {
	a.Uncounted = f.N - min(f.N, a.DeviceDrops+a.QdiscDrops)
	a.UncountedWhy = "freed on kfree_skb beyond tun's and the qdisc's drops: " + what
	return a
}

// CheckFreed checks that kfree_skb freed at least the frames a's counters
// call dropped: a counted drop that freed no frame is a counter wrong.
func CheckFreed(tb testing.TB, a counters.Accounting, f FreedCount) {
	tb.Helper()
	assert.Check(tb, f.N >= a.DeviceDrops+a.QdiscDrops,
		"tun and the qdisc counted more drops than kfree_skb freed frames: %v; %v", f, a)
}
