package qdisc

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/netenv"
)

// progressPeriod is the longest the consumer may go without a new frame
// while the senders run; progressPeriods is how many periods one test
// watches. The load runs until then, bounded by progressHardStop.
const (
	progressPeriod   = 500 * time.Millisecond
	progressPeriods  = 4
	progressHardStop = 30 * time.Second
)

// TestProgress watches delivery while 2×vCPUs senders and the consumer run:
// the delivered count must grow in every progressPeriod. A stall (a queue
// stopped and never woken, a qdisc nobody runs) fails with the qdisc and
// device state of the moment.
func TestProgress(t *testing.T) {
	feature.Of(t, feature.Seed003)
	n := 2 * runtime.NumCPU()
	for _, p := range paths {
		for _, kind := range qdiscs {
			t.Run(fmt.Sprintf("%s/%s/senders=%d", p.name, kind, n), func(t *testing.T) {
				e := netenv.New(t)
				r := p.build(t, e)
				r.setQdisc(t, kind)
				base, err := r.snap()
				assert.NilError(t, err)

				l := startLoad(t, r, loadOpts{senders: n, duration: progressHardStop})
				tick := time.NewTicker(progressPeriod)
				defer tick.Stop()
				var prev uint64
				for period := 1; period <= progressPeriods; period++ {
					select {
					case <-l.done:
						_, err := l.wait()
						t.Fatalf("the senders stopped after %d of %d periods (hard stop %v): %v", period-1, progressPeriods, progressHardStop, err)
					case <-tick.C:
					}
					got, err := r.delivered(l.lo, l.hi)
					assert.NilError(t, err)
					if got <= prev {
						l.stop()
						s, err := r.account(l.handed.Load(), l.lo, l.hi, base)
						assert.NilError(t, err)
						t.Fatalf("no frame delivered in period %d (%v): delivered stuck at %d; state: %v", period, progressPeriod, got, s)
					}
					prev = got
				}
				_, err = l.stop()
				assert.NilError(t, err)
				t.Logf("delivery grew in each of %d periods of %v; %d frames delivered", progressPeriods, progressPeriod, prev)
			})
		}
	}
}
