package vhost

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpumeter"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/rounds"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// loadResult is how a load run ended.
type loadResult struct {
	// ledger is the final ledger, whose uncounted term holds the frames
	// dropped before the qdisc (burst).
	ledger counters.Accounting
	burst  uint64        // frames freed before the qdisc (QDISC_BURST_DROP)
	took   time.Duration // from the first send to the drained state
}

// load runs senders goroutines, each with its own stream, for duration
// (or until each sent perSender frames when perSender > 0), while guest 0
// takes frames: at most vhostnet.Batch buffers per tick when tick > 0, as fast
// as it can otherwise. When the senders are done the guest drains at full
// speed until every frame is accounted for.
func (r *rig) load(senders int, duration time.Duration, perSender int, tick time.Duration) loadResult {
	r.tb.Helper()
	burst := r.watchBurstDrops()
	start := time.Now()
	sending := r.startSenders(senders, duration, perSender)
	g, rv := r.guests[0], r.receiver(false)
	r.consume(g, rv, sending.done, tick)
	total := sending.sent.Load()
	r.collect(g, rv, func(rv *receiver) bool {
		s := r.mustState()
		a := dropmon.BookBurst(account(total, rv.got, s), burst())
		// Balanced, or more counted than sent, where waiting cannot help.
		return s.Qdisc.Qlen == 0 && (a.Balanced() || a.Received+a.DeviceDrops+a.QdiscDrops > total)
	})
	took := time.Since(start)
	b := burst()
	return loadResult{ledger: dropmon.BookBurst(account(total, rv.got, r.mustState()), b), burst: b, took: took}
}

// sending is a load's senders at work: what they handed to the kernel so
// far, and a channel closed once they are all done.
type sending struct {
	sent atomic.Uint64
	done chan struct{}
}

// startSenders starts the senders of load.
func (r *rig) startSenders(senders int, duration time.Duration, perSender int) *sending {
	r.tb.Helper()
	sg := &sending{done: make(chan struct{})}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range senders {
		s := r.sender(uint32(i))
		wg.Go(func() {
			for k := 0; perSender <= 0 || k < perSender; k += vhostnet.Batch {
				if perSender <= 0 && time.Since(start) > duration {
					return
				}
				chunk := vhostnet.Batch
				if perSender > 0 {
					chunk = min(chunk, perSender-k)
				}
				res, err := s.Send(chunk)
				sg.sent.Add(res.Handed())
				if err != nil {
					r.tb.Errorf("sender %d: %v", i, err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(sg.done) }()
	return sg
}

// consume has guest g take frames until done is closed: vhostnet.Batch
// buffers per tick when tick > 0, every free buffer as fast as it can
// otherwise.
func (r *rig) consume(g *vhostnet.Net, rv *receiver, done <-chan struct{}, tick time.Duration) {
	r.tb.Helper()
	var ticks <-chan time.Time
	if tick > 0 {
		t := time.NewTicker(tick)
		defer t.Stop()
		ticks = t.C
	}
	for {
		post := g.RX.Free()
		if tick > 0 {
			select {
			case <-done:
				return
			case <-ticks:
				post = vhostnet.Batch
			}
		} else {
			select {
			case <-done:
				return
			default:
			}
		}
		_, err := g.Post(post)
		assert.NilError(r.tb, err)
		n, err := g.Receive(rv.check)
		assert.NilError(r.tb, err)
		assert.NilError(r.tb, rv.first)
		if n == 0 && tick <= 0 {
			_, err := g.WaitCall(time.Millisecond)
			assert.NilError(r.tb, err)
		}
	}
}

// raceFor is how long TestRace's senders run.
const raceFor = time.Second

// TestRace: two senders and a guest that consumes at most vhostnet.Batch
// buffers a millisecond, for raceFor. Afterwards the queue is not stalled
// (the guest drains everything) and the ledger balances exactly.
//
// With the flag tun drops nothing. The seed allows the rare frame that
// loses the race between two producers (__ptr_ring_produce fails on a ring
// another CPU just filled: SKB_DROP_REASON_FULL_RING), but this tap has one
// queue behind one root qdisc, and every path of __dev_xmit_skb
// (net/core/dev.c:4251) reaches tun_net_xmit only through the qdisc's
// single runner (qdisc_run_begin), so the two senders never produce into
// the ring at once. The pfifo holds shortFIFO frames: what it holds when
// the senders stop drains in milliseconds, where bigFIFO's backlog took
// the guest 5-7 s; a shorter queue only moves drops into the qdisc,
// where the flag's promise (no tun drop) is the same.
func TestRace(t *testing.T) {
	observe.Of(t, feature.Seed000Vhost)
	for _, s := range []setup{
		{qdisc: qdiscDefault},
		{backpressure: true, qdisc: qdiscShort},
		{backpressure: true, qdisc: qdiscFqCodel},
	} {
		t.Run(s.String(), func(t *testing.T) {
			r := newRig(t, s)
			res := r.load(2, raceFor, 0, time.Millisecond)
			a := res.ledger
			t.Logf("2 senders for %v, guest ≤ %d buffers/ms, drained after %v: %v (%d burst drops before the qdisc)",
				raceFor, vhostnet.Batch, res.took.Round(time.Millisecond), a, res.burst)
			assert.Assert(t, a.Balanced(), "%v", a)
			if s.backpressure {
				assert.Equal(t, a.DeviceDrops, uint64(0),
					"tun drops with the flag, one queue and a qdisc (its single runner is the ring's only producer): %v", a)
			}
		})
	}
}

// BenchmarkRX is the seed's tap + vhost-net row: frames per second the
// guest receives and frames per second lost (tun drops + qdisc drops, also
// reported apart), with 1 and 2 sender threads, stock (flag off, the
// default qdisc: side A, twice a round for the A/A floor) against the flag
// with fq_codel (side B), in interleaved rounds (internal/guest/rounds: go
// test -count N is N rounds), and what each frame received cost the
// guest (cpumeter.Usage.Report). b.N frames per sender; the clock runs
// from the first send until the guest has drained the tap. The senders
// wait where the stopped queue pushes back, as the seed's pktgen does
// (traffic.NewWaitingSender): a stock tap never makes them wait, so its
// losses are tun's tail-drops; with the flag the qdisc holds at most their
// send buffers' worth, and what it still drops is fq_codel's own.
//
//	go test -c ./suites/vhost && ./vhost.test -test.run '^$' -test.bench RX -test.benchtime 100000x
func BenchmarkRX(b *testing.B) {
	stock, patched := setup{qdisc: qdiscDefault}, setup{backpressure: true, qdisc: qdiscFqCodel}
	for _, senders := range []int{1, 2} {
		b.Run(fmt.Sprintf("senders=%d", senders), func(b *testing.B) {
			rounds.Run(b, func(b *testing.B) { benchRX(b, stock, senders) },
				func(b *testing.B) { benchRX(b, patched, senders) })
		})
	}
}

func benchRX(b *testing.B, s setup, senders int) {
	r := newRig(b, s)
	r.waiting = true
	meter, err := cpumeter.Start()
	assert.NilError(b, err)
	defer meter.Close()
	b.ResetTimer()
	res := r.load(senders, 0, b.N, 0)
	b.StopTimer()
	cpu, err := meter.Stop()
	assert.NilError(b, err)
	a := res.ledger
	assert.Assert(b, a.Balanced(), "%v", a)
	sec := res.took.Seconds()
	b.ReportMetric(float64(a.Received)/sec, "rx-pps")
	b.ReportMetric(float64(a.DeviceDrops+a.QdiscDrops+a.Uncounted)/sec, "lost/s")
	b.ReportMetric(float64(a.DeviceDrops)/sec, "tun_drops/s")
	b.ReportMetric(float64(a.QdiscDrops+a.Uncounted)/sec, "qdisc_drops/s")
	cpu.Report(b, a.Received)
	b.ReportMetric(0, "ns/op")
	b.Logf("%v: %v (%d burst drops before the qdisc) in %v, %v of CPU",
		s, a, res.burst, res.took.Round(time.Millisecond), cpu.Busy)
}
