package qdisc

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

const (
	// cycles is how many deactivate/reactivate cycles one test runs.
	cycles = 3
	// resumeTimeout bounds the wait for delivery to resume after a cycle.
	resumeTimeout = 5 * time.Second
	// checkFrames is the budget of the load that follows the cycles.
	checkFrames = 4000
	// checkStream is its first stream, apart from the cycling load's.
	checkStream = 64
)

// reactivation is one way to deactivate and reactivate the qdisc under
// load. It returns once frames were seen in the deactivated state.
type reactivation struct {
	name string
	do   func(t *testing.T, r *rig, l *load)
}

var reactivations = []reactivation{
	{"link_down_up", func(t *testing.T, r *rig, l *load) {
		down := l.down.Load()
		r.e.Down(t, r.dev)
		_, err := counters.WaitFor(t.Context(), resumeTimeout, func() (uint64, error) { return l.down.Load(), nil },
			func(v uint64) bool { return v > down })
		assert.NilError(t, err, "no sender saw ENETDOWN after %s went down", r.dev.Attrs().Name)
		r.e.Up(t, r.dev)
	}},
	{"qdisc_replace", func(t *testing.T, r *rig, l *load) {
		// pfifo -> bfifo -> pfifo: a change of kind grafts a new qdisc,
		// which deactivates the device's queues and activates them again.
		r.setQdisc(t, "bfifo")
		_, err := counters.WaitFor(t.Context(), resumeTimeout, func() (counters.Qdisc, error) {
			return counters.ReadRootQdisc(r.e, r.dev.Attrs().Name)
		}, func(q counters.Qdisc) bool { return q.Kind == "bfifo" && q.Packets+q.Drops > 0 })
		assert.NilError(t, err, "no frame went through the bfifo that replaced pfifo")
		r.setQdisc(t, "pfifo")
	}},
}

// TestReactivate deactivates and reactivates the device's qdisc (link
// down/up, root qdisc replace) while 2×vCPUs senders run. After each cycle
// delivery must resume; once the senders stop the backlog must reach 0; and
// a fresh load through the reactivated qdisc must balance exactly. Frames
// caught in a deactivation are freed without a drop count (qdisc_reset,
// noop_qdisc), so only the fresh load is held to the exact ledger.
func TestReactivate(t *testing.T) {
	observe.Of(t, feature.Seed003)
	n := 2 * runtime.NumCPU()
	for _, p := range paths {
		for _, act := range reactivations {
			t.Run(fmt.Sprintf("%s/%s/senders=%d", p.name, act.name, n), func(t *testing.T) {
				r := p.rig(t, "pfifo")
				ctx := testContext(t)

				l := startLoad(t, r, loadOpts{senders: n, duration: time.Minute, tolerateDown: true})
				for i := range cycles {
					act.do(t, r, l)
					before, err := r.delivered(l.lo, l.hi)
					assert.NilError(t, err)
					_, err = counters.WaitFor(ctx, resumeTimeout, func() (uint64, error) { return r.delivered(l.lo, l.hi) },
						func(v uint64) bool { return v > before })
					if err != nil {
						s, serr := r.state()
						assert.NilError(t, serr)
						t.Fatalf("cycle %d: delivery did not resume after %s: %v; qdisc %v; dev %v", i+1, act.name, err, s.q, s.dev)
					}
				}
				_, err := l.stop()
				assert.NilError(t, err)
				q, err := counters.WaitMoving(ctx, settleTimeout, drainStill, func() (counters.Qdisc, error) {
					return counters.ReadRootQdisc(r.e, r.dev.Attrs().Name)
				}, func(q counters.Qdisc) bool { return q.Qlen == 0 })
				assert.NilError(t, err, "backlog stranded in the reactivated qdisc")
				t.Logf("after %d cycles of %s: %v; %d sends met ENETDOWN", cycles, act.name, q, l.down.Load())

				base, err := r.state()
				assert.NilError(t, err)
				check := startLoad(t, r, loadOpts{senders: n, stream: checkStream, frames: checkFrames, duration: time.Minute})
				handed, err := check.wait()
				assert.NilError(t, err)
				assert.Equal(t, handed, uint64(checkFrames), "the check load did not hand over its budget")
				s, err := r.settle(ctx, handed, check.lo, check.hi, base)
				assert.NilError(t, err, "frames stranded in the reactivated qdisc")
				assert.Assert(t, s.a.Balanced(), "%v", s)
				t.Logf("check load: %v", s)
			})
		}
	}
}
