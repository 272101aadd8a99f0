package taprace

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// SmallRing races seed 000's handshake where it can fail: tun_net_xmit()
// stops the queue when its produce filled the ring, then looks at the ring
// again and wakes the queue if a consumer emptied it meanwhile. One sender
// on a CPU of its own runs against the consumer on a ring of a few slots;
// without the second look the queue stays stopped over an empty ring, a
// stall tun has no watchdog to undo. A stall is nothing delivered for
// Every+Bound while the consumer keeps finding nothing and the qdisc holds
// frames (counters.WatchStall). The suite builds the tap and the consumer,
// calls Race and then Settle, and judges.
type SmallRing struct {
	Sender    *traffic.Sender
	SenderCPU int
	Consumer  Poller
	// Read reads the tap's and its qdisc's counters.
	Read func() (Counted, error)
	// Burst reads the frames freed with QDISC_BURST_DROP so far.
	Burst func() (uint64, error)
	// Every is the window in which the consumer must get a frame while the
	// qdisc holds some; a window without one is looked at for Bound more.
	Every, Bound time.Duration
	// Limit bounds the wait for the ledger once the race is over.
	Limit time.Duration
	// Sent is the frames handed to the kernel: those before the race (a
	// fill), and the race's as it goes.
	Sent atomic.Uint64
	// Others is the frames delivered outside the consumer (a probe's read).
	Others uint64
}

// SmallLook is one look at the raced tap: its counters, the
// QDISC_BURST_DROP frames, and the consumer's frames and idle reads.
type SmallLook struct {
	Counted
	Burst, Got, Idle uint64
}

func (l SmallLook) String() string {
	return fmt.Sprintf("%v; QDISC_BURST_DROP %d; got %d, found nothing %d times", l.State, l.Burst, l.Got, l.Idle)
}

// Stall is a queue seen stalled: nothing delivered since Since (the last
// window that delivered), seen at Seen; From is the look that raised the
// suspicion, Obs the last one.
type Stall struct {
	Since, Seen time.Time
	From, Obs   SmallLook
	When        string // where it was seen, if not during the race: " while the qdisc drained"
}

// Raced is what Race saw: a stall or none, the windows without delivery
// that moved again, when the race started and how long it ran.
type Raced struct {
	Stall    *Stall
	Suspects int
	Start    time.Time
	Took     time.Duration
}

// Look reads the tap and the consumer.
func (r *SmallRing) Look() (SmallLook, error) {
	c, err := r.Read()
	if err != nil {
		return SmallLook{Counted: c}, err
	}
	b, err := r.Burst()
	return SmallLook{c, b, r.Consumer.Got() + r.Others, r.Consumer.Idle()}, err
}

// Ledger is the ledger of a look: every frame sent delivered, dropped
// (QDISC_BURST_DROP included) or in the qdisc.
func (r *SmallRing) Ledger(l SmallLook) counters.Accounting {
	a := l.Ledger
	a.Sent, a.Received = r.Sent.Load(), l.Got
	return dropmon.BookBurst(a, l.Burst)
}

// Progress is what the stall watch reads of a look.
func Progress(l SmallLook) counters.Progress {
	return counters.Progress{Delivered: l.Delivered, Held: l.Ledger.QdiscBacklog, Idle: l.Idle}
}

// Race sends for d and watches the tap meanwhile; it returns at the first
// stall.
func (r *SmallRing) Race(t *testing.T, d time.Duration) Raced {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	start := time.Now()
	sendErr := traffic.SendOn(ctx, r.Sender, r.SenderCPU, &r.Sent)
	st, suspects, err := counters.WatchStall(ctx, start, r.Every, r.Bound, r.Look, Progress, t.Logf)
	assert.NilError(t, err)
	cancel()
	took := time.Since(start)
	assert.NilError(t, <-sendErr)
	res := Raced{Suspects: suspects, Start: start, Took: took}
	if st != nil {
		res.Stall = &Stall{Since: st.Since, Seen: st.Seen, From: st.From, Obs: st.Obs}
	}
	return res
}

// Settle waits until every frame sent is accounted for, the qdisc empty
// unless the queue stalled (then its backlog is the frames still queued),
// stops the consumer and returns the ledger and the last look.
func (r *SmallRing) Settle(t *testing.T, stalled bool) (counters.Accounting, SmallLook) {
	t.Helper()
	last, werr := counters.WaitFor(context.Background(), r.Limit, r.Look, func(l SmallLook) bool {
		return (stalled || l.Ledger.QdiscBacklog == 0) && r.Ledger(l).Balanced()
	})
	n, err := r.Consumer.Stop()
	assert.NilError(t, err)
	last.Got = n + r.Others
	l := r.Ledger(last)
	assert.NilError(t, werr, "every frame accounted after the sender stopped; %v", l)
	return l, last
}
