package devmap

import (
	"context"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// BenchmarkRedirect has the shape of the seed's table: redirect rate
// veth→veth, "Native" (devmap entry without a program) against "Native + 2nd
// xdp_prog" (the entry carries a devmap program that returns XDP_PASS). The
// frames come from the live-frames runner (5.18+) arriving on in0, go through
// xdp_bench_redirect and the devmap to a0, and are counted by the sink on
// a0p. Metrics: tx-pps (frames redirected per second), rx-pps (received at the
// sink), lost/s (redirected but not received: dropped in flush or in veth).
func BenchmarkRedirect(b *testing.B) {
	const perOp, batch = 1 << 16, 64
	for _, tc := range []struct {
		name string
		prog func(*rig) *ebpf.Program
	}{
		{"Native", func(*rig) *ebpf.Program { return nil }},
		{"Native+2ndProg", func(r *rig) *ebpf.Program { return r.objs.XdpBenchDevmap }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := newRig(b, false)
			observe.Probe(b, feature.XDPLiveFrames, probeLiveFrames(r.objs.XdpSink))
			r.setEntry(b, r.objs.Devmap, 0, r.dst[0], tc.prog(r))
			frame := traffic.Frame([6]byte{2, 0, 0, 0, 0, 1}, 1, 0)

			// Counted from here: the probe's frames may have reached the sink.
			before := r.received(b, r.sink[0])
			var ops int
			start := time.Now()
			for b.Loop() {
				if err := r.runLive(r.objs.XdpBenchRedirect, frame, perOp, batch); err != nil {
					b.Fatal(err)
				}
				ops++
			}
			elapsed := time.Since(start).Seconds()
			sent := uint64(ops * perOp)
			// The sink's NAPI may still be draining a0p's ring: wait until
			// the count settles, then charge the rest as lost.
			get := func() (uint64, error) { return r.received(b, r.sink[0]) - before, nil }
			received, _ := counters.WaitFor(context.Background(), 2*time.Second, get, func(n uint64) bool { return n >= sent })
			a := counters.Accounting{Sent: sent, Received: received, DeviceDrops: sent - received}
			b.Logf("%v (device drops = lost between redirect and the sink)", a)
			b.ReportMetric(float64(sent)/elapsed, "tx-pps")
			b.ReportMetric(float64(received)/elapsed, "rx-pps")
			b.ReportMetric(float64(sent-received)/elapsed, "lost/s")
		})
	}
}
