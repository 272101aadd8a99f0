package tun

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/dropmon"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tunwake"
)

const (
	// raceFor is how long the senders race the reader.
	raceFor = time.Second
	// progressEvery is the window in which the reader should get a frame.
	progressEvery = 500 * time.Millisecond
	// raceHeld is how many frames the qdisc holds when the race starts.
	raceHeld = 64
)

// TestRace: 2 and 4 sending threads against one reader for raceFor,
// from a tap filled while the reader was idle. The
// queue must never stall (a stopped queue over an empty ring), every frame
// must be accounted for once the senders stop, every stream must arrive in
// order with its missing frames exactly the ledger's drops, the kernel
// must log no splat, and with backpressure tun may drop no more frames
// than wakes came over a full ring (tunwake.CheckDrops); stock tail-drop has
// no limit.
func TestRace(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, threads := range []int{2, 4} {
		for _, v := range variants {
			t.Run(fmt.Sprintf("threads=%d/%s", threads, v.name), func(t *testing.T) {
				race(t, threads, v.flags)
			})
		}
	}
}

func race(t *testing.T, threads int, flags uint16) {
	o := tapOpts{ring: 256, limit: 1000, flags: flags}
	rc := newRacer(t, o, threads)
	var tr *tunwake.Tracer
	if o.backpressure() {
		tr = tunwake.Trace(t, int(rc.e.NS), rc.ifindex)
	}
	ctx, cancel := context.WithTimeout(t.Context(), raceFor)
	defer cancel()
	rc.startSenders(ctx)
	rc.startReader()
	stalls := rc.watch(t, ctx)
	rc.wg.Wait()
	close(rc.sendErr)
	for err := range rc.sendErr {
		assert.NilError(t, err)
	}

	l := rc.settle(t)
	assert.Check(t, is.Len(stalls, 0), "the queue stalled: %v", stalls)
	assert.Assert(t, l.Balanced(), "%v", l)
	checkStreams(t, l, sentBy(rc.senders...), rc.r, rc.probe)
	secs := raceFor.Seconds()
	t.Logf("%d threads: %.0f sent/s, %.0f read/s, %.0f tun drops/s, %.0f qdisc drops/s (%.4f %% tun drops); %v",
		threads, float64(l.Sent)/secs, float64(l.Received)/secs, float64(l.DeviceDrops)/secs, float64(l.QdiscDrops)/secs,
		100*float64(l.DeviceDrops)/float64(l.Sent), l)
	if tr != nil {
		tunwake.CheckDrops(t, tr, l.DeviceDrops, l)
	}
}

// racer is TestRace's tap with its senders and its reader.
type racer struct {
	*tapRig
	senders []*traffic.Sender
	// r is the reader; probe reads beside it when it seems stuck.
	r, probe   *traffic.Reader
	burst      func() (uint64, error)
	sent, read atomic.Uint64
	wg         sync.WaitGroup
	sendErr    chan error
	stopRead   chan struct{}
	readErr    chan error
}

// newRacer starts from a full ring (the queue stopped, with the flag: the
// fill fixture judges it) and adds senders to fill's, up to threads.
func newRacer(t *testing.T, o tapOpts, threads int) *racer {
	fx := fill(t, o, o.ring+raceHeld)
	rc := &racer{tapRig: fx.tapRig, senders: []*traffic.Sender{fx.s},
		sendErr: make(chan error, threads), stopRead: make(chan struct{}), readErr: make(chan error, 1)}
	rc.sent.Store(fx.res.Handed())
	for i := 2; i <= threads; i++ {
		rc.senders = append(rc.senders, fx.sender(t, uint32(i)))
	}
	rc.burst = fx.burstDrops(t)
	rc.r, rc.probe = traffic.NewReader(fx.dev.File), traffic.NewReader(fx.dev.File)
	return rc
}

// startSenders sends batches from every sender until ctx ends.
func (rc *racer) startSenders(ctx context.Context) {
	for _, s := range rc.senders {
		rc.wg.Go(func() {
			for ctx.Err() == nil {
				r, err := s.Send(traffic.Batch)
				rc.sent.Add(r.Handed())
				if err != nil {
					rc.sendErr <- err
					return
				}
			}
		})
	}
}

// startReader reads until stopRead closes.
func (rc *racer) startReader() {
	go func() {
		for {
			select {
			case <-rc.stopRead:
				rc.readErr <- nil
				return
			default:
			}
			n, err := rc.r.Read(1, 20*time.Millisecond)
			rc.read.Add(uint64(n))
			if err != nil {
				rc.readErr <- err
				return
			}
		}
	}()
}

// watch looks at delivery (tun counts tx_packets in read()) every
// progressEvery until ctx ends. A window in which the senders sent and
// nothing was delivered is checked with a read of our own: a frame means
// the reader was starved of CPU; an empty ring with a qdisc backlog is a
// stopped queue over an empty ring, which must deliver again within
// waitLimit, or it is a stall.
func (rc *racer) watch(t *testing.T, ctx context.Context) (stalls []string) {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	var last state
	var lastSent uint64
	starved := 0
	for {
		select {
		case <-ctx.Done():
			t.Logf("a read of our own found the reader starved of CPU in %d windows of %v", starved, progressEvery)
			return stalls
		case <-tick.C:
		}
		st, err := rc.state()
		assert.NilError(t, err)
		sent := rc.sent.Load()
		if st.Link.TxPackets == last.Link.TxPackets && sent > lastSent {
			got, err := rc.probe.ReadNow()
			assert.NilError(t, err)
			rc.read.Add(uint64(got))
			switch {
			case got > 0:
				starved++
			case st.Q.Qlen > 0:
				delivered := func(now state) bool { return now.Link.TxPackets > st.Link.TxPackets }
				if _, err := counters.WaitFor(context.Background(), waitLimit, rc.state, delivered); err != nil {
					stalls = append(stalls, fmt.Sprintf("nothing delivered with the qdisc holding frames over an empty ring "+
						"(a read of our own found it empty), at %v: %v", st, err))
				}
			}
		}
		last, lastSent = st, sent
	}
}

// settle waits until every frame sent is accounted for, stops the reader
// and returns the ledger.
func (rc *racer) settle(t *testing.T) counters.Accounting {
	total := rc.sent.Load()
	ledger := func(s sample) counters.Accounting {
		return dropmon.BookBurst(account(total, int(rc.read.Load()), s.state, 0), s.burst)
	}
	sm, werr := counters.WaitFor(context.Background(), waitLimit, rc.sampler(rc.burst), func(s sample) bool {
		return s.Q.Qlen == 0 && ledger(s).Balanced()
	})
	close(rc.stopRead)
	assert.NilError(t, <-rc.readErr)
	l := ledger(sm)
	assert.NilError(t, werr, "every frame accounted after the senders stopped; %v", l)
	return l
}
