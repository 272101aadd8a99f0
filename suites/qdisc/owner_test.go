package qdisc

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpus"
	"github.com/xmitcheck/xmitcheck/internal/guest/kcsan"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

const (
	// ownerWant is how many bursts ending on a defer_list batch of two
	// frames or more TestOwnerRunsItsBatch wants to see, and ownerBudget
	// how long it bursts at most to see them: the frames of a burst meet
	// at the qdisc within a few hundred nanoseconds at best, and one
	// joins the other's list about once in two hundred bursts under TCG.
	ownerWant   = 5
	ownerBudget = 60 * time.Second
	// meetBound bounds the senders' spin before a burst.
	meetBound = 100 * time.Millisecond
)

// TestOwnerRunsItsBatch holds what seed 003's fast path leans on: a
// sender whose frame joins q->defer_list returns at once because the CPU
// that owns the list will enqueue it and run the qdisc. Senders on every
// CPU are released together in short bursts, each followed by silence: an
// owner that enqueued a batch of two frames or more and did not run the
// qdisc leaves them there with nobody to send after it (under a steady
// load the next sender would run them). After each burst the qdisc must
// drain with nothing more sent (settle: a drain that stands still for
// drainStill fails at once). bpf/batch.c counts the frames each
// __dev_queue_xmit() call enqueued: the test bursts until ownerWant bursts
// ended on a batch of two or more, or for ownerBudget, and one that saw
// none is an error, never a pass.
func TestOwnerRunsItsBatch(t *testing.T) {
	observe.Of(t, feature.Seed003)
	observe.Probe(t, feature.QdiscDeferList, probeDeferList())
	r := vethFast.rig(t, "pfifo")
	tr := traceBatches(t, r.dev.Attrs().Index)
	b := startBursts(t, r)
	base, err := r.state()
	assert.NilError(t, err)
	var handed uint64
	bursts, ended := 0, 0
	// Under KCSAN it bursts for kcsan.For at least, whatever it saw.
	least := kcsan.For(0)
	raced := kcsan.Watch(t, feature.Seed003)
	for start := time.Now(); (ended < ownerWant || time.Since(start) < least) &&
		time.Since(start) < max(ownerBudget, least); bursts++ {
		before, err := tr.counts()
		assert.NilError(t, err)
		assert.NilError(t, tr.resetLast())
		n, err := b.release()
		assert.NilError(t, err, "burst %d", bursts+1)
		handed += n
		s, err := r.settle(testContext(t), handed, b.lo, b.hi, base)
		after, cerr := tr.counts()
		assert.NilError(t, cerr)
		last, lerr := tr.last()
		assert.NilError(t, lerr)
		assert.NilError(t, err, "burst %d: frames left in the qdisc with no sender after them; the burst's last "+
			"call enqueued %d (an owner that did not run its batch?); the burst: %v", bursts+1, last, after.sub(before))
		assert.Assert(t, s.a.Balanced(), "%v", s)
		if last >= 2 {
			ended++
		}
	}
	total, err := tr.counts()
	assert.NilError(t, err)
	summary := fmt.Sprintf("%d bursts of a frame from each of %d CPUs, %d of them ended on a batch of 2 or more; %v",
		bursts, len(b.senders), ended, total)
	t.Log(summary)
	raced(total.batches())
	if ended == 0 {
		observe.Fault(t, feature.Environment, "no burst ended on a defer_list batch of 2 or more in %v (%s): "+
			"the owner's run was never put to the test here", ownerBudget, summary)
	}
	// No observe.Shows: a kernel without 003 has a defer_list owner too,
	// and it runs its batch; this test guards 003's premise, it does not
	// tell 003 from its absence (TestFastPath does).
	t.Logf("the owner ran its batch: the qdisc drained after each burst")
}

// bursts is a sender bound to each CPU, each with its own socket and
// stream (lo..hi-1), waiting to be released together.
type bursts struct {
	senders []*traffic.Sender
	lo, hi  uint32
	// next hands each sender the gate of its next burst; closing the gate
	// releases them all at once.
	next    []chan chan struct{}
	results chan burstResult
	// met counts the senders that reached the end of this burst.
	met atomic.Int64
}

type burstResult struct {
	handed uint64
	err    error
}

// startBursts opens the senders in r's namespace and starts their
// threads, each bound to its CPU.
func startBursts(tb testing.TB, r *rig) *bursts {
	tb.Helper()
	cs, err := cpus.Allowed()
	assert.NilError(tb, err)
	b := &bursts{lo: 0, hi: uint32(len(cs)), results: make(chan burstResult)}
	err = r.e.Do(func() error {
		for i := range b.hi {
			s, err := traffic.NewSender(r.dev.Attrs().Index, b.lo+i)
			if err != nil {
				return err
			}
			b.senders = append(b.senders, s)
		}
		return nil
	})
	assert.NilError(tb, err, "open the burst senders on %s", r.dev.Attrs().Name)
	var wg sync.WaitGroup
	for i, s := range b.senders {
		next := make(chan chan struct{}, 1)
		b.next = append(b.next, next)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			// Returns with the thread bound: the runtime ends it.
			err := cpus.Pin(cs[i%len(cs)])
			for gate := range next {
				<-gate
				if err != nil {
					b.results <- burstResult{err: err}
					continue
				}
				b.meet()
				res, serr := s.Send(1)
				b.results <- burstResult{handed: res.Handed(), err: serr}
			}
		}()
	}
	tb.Cleanup(func() {
		for _, next := range b.next {
			close(next)
		}
		wg.Wait()
	})
	return b
}

// meet spins until every sender has reached it in this burst, or for
// meetBound: a gate's wakeups are milliseconds apart under TCG, the end
// of a spin a few hundred nanoseconds.
func (b *bursts) meet() {
	b.met.Add(1)
	for end := time.Now().Add(meetBound); b.met.Load() < int64(len(b.senders)) && time.Now().Before(end); {
	}
}

// release lets every sender hand a frame to the kernel at once and
// returns how many they handed, once all have.
func (b *bursts) release() (uint64, error) {
	b.met.Store(0)
	gate := make(chan struct{})
	for _, next := range b.next {
		next <- gate
	}
	close(gate)
	var handed uint64
	var errs []error
	for range b.senders {
		res := <-b.results
		handed += res.handed
		if res.err != nil {
			errs = append(errs, res.err)
		}
	}
	if len(errs) > 0 {
		return handed, fmt.Errorf("burst senders: %v", errs)
	}
	return handed, nil
}
