package qdisc

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/netenv"
)

// progressPeriod is the longest the consumer may go without a new frame
// while the senders run.
const progressPeriod = 500 * time.Millisecond

// TestProgress watches delivery while 2×vCPUs senders and the consumer run:
// the delivered count must grow in every progressPeriod. A stall (a queue
// stopped and never woken, a qdisc nobody runs) fails with the qdisc and
// device state of the moment.
func TestProgress(t *testing.T) {
	n := 2 * runtime.NumCPU()
	for _, p := range paths {
		for _, kind := range qdiscs {
			t.Run(fmt.Sprintf("%s/%s/senders=%d", p.name, kind, n), func(t *testing.T) {
				e := netenv.New(t)
				r := p.build(t, e)
				r.setQdisc(t, kind)
				base, err := r.snap()
				assert.NilError(t, err)

				l := startLoad(t, r, loadOpts{senders: n, duration: loadDuration})
				tick := time.NewTicker(progressPeriod)
				defer tick.Stop()
				var prev uint64
				periods := 0
			watch:
				for {
					select {
					case <-l.done:
						break watch
					case <-tick.C:
					}
					select {
					case <-l.done: // the load ended during this period
						break watch
					default:
					}
					got, err := r.delivered(l.lo, l.hi)
					assert.NilError(t, err)
					if got <= prev {
						l.stop()
						s, err := r.account(l.handed.Load(), l.lo, l.hi, base)
						assert.NilError(t, err)
						t.Fatalf("no frame delivered in period %d (%v): delivered stuck at %d; state: %v", periods+1, progressPeriod, got, s)
					}
					prev = got
					periods++
				}
				_, err = l.wait()
				assert.NilError(t, err)
				assert.Assert(t, periods >= int(loadDuration/progressPeriod)-1, "only %d periods observed in a %v load", periods, loadDuration)
				t.Logf("delivery grew in each of %d periods of %v; %d frames delivered", periods, progressPeriod, prev)
			})
		}
	}
}
