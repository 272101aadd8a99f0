package qdisc

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// loadDuration is how long TestNoStrandedPackets' senders run: short,
// bounded, and enough under TCG for thousands of stop/wake cycles of the
// device queue.
const loadDuration = time.Second

// senderCounts are the contention levels: one sender per vCPU, and two.
func senderCounts() []int {
	n := runtime.NumCPU()
	return []int{n, 2 * n}
}

// testContext is cancelled at the test's deadline (less a margin for the
// failure report) or when the test ends.
func testContext(t *testing.T) context.Context {
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-10*time.Second))
		t.Cleanup(cancel)
	}
	return ctx
}

// TestNoStrandedPackets runs N senders through a locked qdisc on a device
// that stops and wakes its queue for loadDuration, watching that delivery
// never stands still for progressStall meanwhile (watchProgress), stops
// them, and checks that the qdisc empties within settleTimeout and that
// every frame is accounted for exactly: a lost wake-up (seed 003's risk)
// stalls delivery under load or leaves frames in the backlog after it.
func TestNoStrandedPackets(t *testing.T) {
	observe.Of(t, feature.Seed003)
	logDeferList(t)
	for _, p := range paths {
		for _, kind := range qdiscs {
			for _, n := range senderCounts() {
				t.Run(fmt.Sprintf("%s/%s/senders=%d", p.name, kind, n), func(t *testing.T) {
					r := p.rig(t, kind)
					base, err := r.state()
					assert.NilError(t, err)

					l := startLoad(t, r, loadOpts{senders: n, duration: progressHardStop})
					handed := watchProgress(t, r, l, base, loadDuration)
					assert.Assert(t, handed > 0, "the senders handed no frame to the kernel in %v", loadDuration)

					s, err := r.settle(testContext(t), handed, l.lo, l.hi, base)
					assert.NilError(t, err, "frames stranded after the senders stopped (lost wake-up?)")
					assert.Assert(t, s.a.Balanced(), "%v", s)
					t.Logf("%v", s)
				})
			}
		}
	}
}

// logDeferList puts the BTF fact next to the results it qualifies.
func logDeferList(t *testing.T) {
	if err := probeDeferList(); err != nil {
		t.Logf("seed 003 fast path absent: %v", err)
		return
	}
	t.Log("seed 003 fast path present: struct Qdisc has defer_list")
}
