package qdisc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpumeter"
	"github.com/xmitcheck/xmitcheck/internal/guest/instrument"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

const (
	// benchHardStop bounds one benchmark run, whatever b.N is.
	benchHardStop = 60 * time.Second
	// tapBenchRing is tun's default txqueuelen (TUN_READQ_SIZE).
	tapBenchRing = 500
)

// BenchmarkContention measures the no-stall workload: b.N frames from N
// sender threads through a locked qdisc. It reports throughput, loss, and
// per delivered packet the NET_TX softirq raises (the cost seed 003
// removes), the __netif_schedule() calls behind them, the NET_TX softirq
// runs from /proc/softirqs, and where the kernel has q->defer_list the
// calls that found it non-empty (the ones seed 003 turns away; see
// TestFastPath). The veth consumer is either fast (the
// qdisc path is the bottleneck) or slow (the ring fills and the queue stops
// and wakes all the time). Nothing is asserted but the ledger.
func BenchmarkContention(b *testing.B) {
	consumers := []path{
		vethFast,
		{"veth_xdp_slow", vethPath.build},
		tapPath,
	}
	for _, c := range consumers {
		for _, kind := range qdiscs {
			for _, n := range senderCounts() {
				b.Run(fmt.Sprintf("%s/%s/senders=%d", c.name, kind, n), func(b *testing.B) {
					r := c.rig(b, kind)
					measure(b, r, n, true)
				})
			}
		}
	}
}

// BenchmarkTapBackpressure is the regression that made seed 000 opt-in
// (8 TCP streams: 13.5 -> 9.13 Gbit/s on the reporter's testbed): 1, 2, 4
// and 8 senders through one tap queue (tun's default ring, pfifo) with a
// reader, IFF_BACKPRESSURE off and on.
func BenchmarkTapBackpressure(b *testing.B) {
	for _, flag := range []struct {
		name  string
		flags uint16
	}{{"off", 0}, {"on", tuntap.IFFBackpressure}} {
		for _, n := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("flag=%s/senders=%d", flag.name, n), func(b *testing.B) {
				if flag.flags != 0 {
					observe.Probe(b, feature.IFFBackpressure, tuntap.ProbeBackpressure())
				}
				e := netenv.New(b)
				r := tapReader(b, e, flag.flags, tapBenchRing)
				r.setQdisc(b, "pfifo")
				measure(b, r, n, false)
			})
		}
	}
}

// measure sends b.N frames through r from n senders, waits until every one
// is accounted for, and reports the figures; with softirqs, those of
// softirqProbes too.
func measure(b *testing.B, r *rig, n int, softirqs bool) {
	var p *softirqProbes
	if softirqs {
		p = attachSoftirqProbes(b, r)
	}
	base, err := r.state()
	if err != nil {
		b.Fatal(err)
	}
	before := p.read(b)

	b.ResetTimer()
	start := time.Now()
	l := startLoad(b, r, loadOpts{senders: n, frames: int64(b.N), duration: benchHardStop})
	handed, err := l.wait()
	if err != nil {
		b.Fatal(err)
	}
	s, err := r.settle(context.Background(), handed, l.lo, l.hi, base)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatalf("frames stranded after the senders stopped: %v", err)
	}
	if handed != uint64(b.N) {
		b.Fatalf("the senders handed %d of %d frames within %v: %v", handed, b.N, benchHardStop, s)
	}
	if s.a.Received == 0 {
		b.Fatalf("nothing delivered: %v", s)
	}
	sec := elapsed.Seconds()
	b.ReportMetric(float64(s.a.Received)/sec, "rx-pps")
	b.ReportMetric(float64(s.a.DeviceDrops+s.a.QdiscDrops+s.a.Uncounted)/sec, "lost/s")
	p.report(b, before, p.read(b), s.a.Received)
	b.Logf("%d senders, %v: %v", n, elapsed.Round(time.Millisecond), s)
}

// softirqProbes count, around a benchmark, the NET_TX softirq raises (the
// cost seed 003 removes), the __netif_schedule() calls behind them, and
// where the kernel has q->defer_list the calls that found it holding a
// frame; a probe that cannot attach is left out, and the NET_TX softirq
// runs of /proc/softirqs are always read.
type softirqProbes struct {
	raises, scheds *eventCounter
	fast           *fastPathTracer
}

// softirqReading is one reading of the probes; a probe left out reads 0.
type softirqReading struct {
	raises, scheds, deferred, runs uint64
}

func attachSoftirqProbes(b *testing.B, r *rig) *softirqProbes {
	p := &softirqProbes{}
	var err error
	if p.raises, err = attachSoftirqRaises(); err != nil {
		b.Logf("NET_TX raises not counted: %v; /proc/softirqs runs are reported instead", err)
	} else {
		b.Cleanup(func() { p.raises.Close() })
		instrument.WatchMisses(b, "the NET_TX raise counter", p.raises.p)
	}
	if p.scheds, err = attachNetifSchedules(); err != nil {
		b.Logf("__netif_schedule() calls not counted: %v", err)
	} else {
		b.Cleanup(func() { p.scheds.Close() })
		instrument.WatchMisses(b, "the __netif_schedule() counter", p.scheds.p)
	}
	if probeDeferList() == nil {
		if p.fast, err = attachFastPath(r.dev.Attrs().Index); err != nil {
			b.Logf("calls that found q->defer_list holding a frame not counted: %v", err)
		} else {
			b.Cleanup(func() { p.fast.Close() })
			p.fast.watchMisses(b)
		}
	}
	return p
}

// read reads every probe attached; a nil p reads nothing.
func (p *softirqProbes) read(b *testing.B) softirqReading {
	var v softirqReading
	if p == nil {
		return v
	}
	v.raises, v.scheds = count(b, p.raises), count(b, p.scheds)
	if p.fast != nil {
		c, err := p.fast.counts()
		if err != nil {
			b.Fatal(err)
		}
		v.deferred = c.Locked.Candidates + c.Wake.Candidates
	}
	runs, err := cpumeter.NetTxRuns()
	if err != nil {
		b.Fatal(err)
	}
	v.runs = runs
	return v
}

// report reports per delivered packet what the probes counted between
// before and after.
func (p *softirqProbes) report(b *testing.B, before, after softirqReading, delivered uint64) {
	if p == nil {
		return
	}
	perPkt := func(d uint64) float64 { return float64(d) / float64(delivered) }
	if p.raises != nil {
		b.ReportMetric(perPkt(after.raises-before.raises), "raises/pkt")
	}
	if p.scheds != nil {
		b.ReportMetric(perPkt(after.scheds-before.scheds), "scheds/pkt")
	}
	if p.fast != nil {
		b.ReportMetric(perPkt(after.deferred-before.deferred), "deferred/pkt")
	}
	b.ReportMetric(perPkt(after.runs-before.runs), "txruns/pkt")
}

// count reads c, or returns 0 when c is nil (not attached).
func count(b *testing.B, c *eventCounter) uint64 {
	if c == nil {
		return 0
	}
	v, err := c.Count()
	if err != nil {
		b.Fatal(err)
	}
	return v
}
