package qdisc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/netenv"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
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
					feature.Require(b, tuntap.ProbeBackpressure())
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
// is accounted for, and reports the figures. With softirqs it also counts
// NET_TX raises and __netif_schedule() calls, and where the kernel has
// q->defer_list the calls that found it non-empty.
func measure(b *testing.B, r *rig, n int, softirqs bool) {
	var raises, scheds *eventCounter
	var fast *fastPathTracer
	if softirqs {
		var err error
		if raises, err = attachSoftirqRaises(); err != nil {
			b.Logf("NET_TX raises not counted: %v; /proc/softirqs runs are reported instead", err)
		} else {
			defer raises.Close()
		}
		if scheds, err = attachNetifSchedules(); err != nil {
			b.Logf("__netif_schedule() calls not counted: %v", err)
		} else {
			defer scheds.Close()
		}
		if probeDeferList() == nil {
			if fast, err = attachFastPath(r.dev.Attrs().Index); err != nil {
				b.Logf("calls that found q->defer_list non-empty not counted: %v", err)
			} else {
				defer fast.Close()
			}
		}
	}
	base, err := r.state()
	if err != nil {
		b.Fatal(err)
	}
	raises0, scheds0, deferred0 := count(b, raises), count(b, scheds), deferred(b, fast)
	runs0, err := netTxRuns()
	if err != nil {
		b.Fatal(err)
	}

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
	runs1, err := netTxRuns()
	if err != nil {
		b.Fatal(err)
	}
	perPkt := func(d uint64) float64 { return float64(d) / float64(s.a.Received) }
	sec := elapsed.Seconds()
	b.ReportMetric(float64(s.a.Received)/sec, "rx-pps")
	b.ReportMetric(float64(s.a.DeviceDrops+s.a.QdiscDrops+s.a.Uncounted)/sec, "lost/s")
	if raises != nil {
		b.ReportMetric(perPkt(count(b, raises)-raises0), "raises/pkt")
	}
	if scheds != nil {
		b.ReportMetric(perPkt(count(b, scheds)-scheds0), "scheds/pkt")
	}
	if fast != nil {
		b.ReportMetric(perPkt(deferred(b, fast)-deferred0), "deferred/pkt")
	}
	if softirqs {
		b.ReportMetric(perPkt(runs1-runs0), "txruns/pkt")
	}
	b.Logf("%d senders, %v: %v", n, elapsed.Round(time.Millisecond), s)
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

// deferred reads how many calls found q->defer_list non-empty, or returns 0
// when t is nil (not attached).
func deferred(b *testing.B, t *fastPathTracer) uint64 {
	if t == nil {
		return 0
	}
	c, err := t.counts()
	if err != nil {
		b.Fatal(err)
	}
	return c.Locked.Candidates + c.Wake.Candidates
}
