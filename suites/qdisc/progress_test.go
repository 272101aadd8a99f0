package qdisc

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/margin"
)

// watchProgress samples delivery every progressSample. A lost wake-up
// stalls delivery for good; a loaded or PREEMPT_RT machine can pause it
// for a while: a gap counts as a stall only past progressStall, so the
// watch runs on, up to progressStall past its end, while a gap is open.
// The load is bounded by progressHardStop.
const (
	progressStall    = 5 * time.Second
	progressSample   = 10 * time.Millisecond
	progressHardStop = 30 * time.Second
)

// watchProgress watches delivery for at least watch while l runs (started
// with duration progressHardStop), then stops l and returns what it
// handed: the delivered count must never stand still for progressStall.
// A stall (a queue stopped and never woken, a qdisc nobody runs) fails t
// with the qdisc and device state of the moment; the longest gap is noted
// for the soak's margins.
func watchProgress(t *testing.T, r *rig, l *load, base state, watch time.Duration) uint64 {
	t.Helper()
	tick := time.NewTicker(progressSample)
	defer tick.Stop()
	var prev uint64
	start := time.Now()
	grew, worst := start, time.Duration(0)
	for time.Since(start) < watch || time.Since(grew) > progressSample {
		select {
		case <-l.done:
			_, err := l.wait()
			t.Fatalf("the senders stopped after %v of %v (hard stop %v): %v",
				time.Since(start), watch, progressHardStop, err)
		case <-tick.C:
		}
		got, err := r.delivered(l.lo, l.hi)
		assert.NilError(t, err)
		now := time.Now()
		if got > prev {
			grew, prev = now, got
			continue
		}
		// A stall is seen only by a sample that finds no growth: a late
		// sample that finds some says nothing of the time before it.
		gap := now.Sub(grew)
		worst = max(worst, gap)
		if gap >= progressStall {
			margin.Note(progressStall, gap, true)
			l.stop()
			s, err := r.account(l.handed.Load(), l.lo, l.hi, base)
			assert.NilError(t, err)
			t.Fatalf("no frame delivered for %v after %v of load: delivered stuck at %d; state: %v",
				gap.Round(time.Millisecond), grew.Sub(start).Round(time.Millisecond), got, s)
		}
	}
	margin.Note(progressStall, worst, false)
	handed, err := l.stop()
	assert.NilError(t, err)
	t.Logf("delivery never stood still for %v in %v (longest %v); %d frames delivered",
		progressStall, time.Since(start).Round(time.Millisecond), worst.Round(time.Millisecond), prev)
	return handed
}
