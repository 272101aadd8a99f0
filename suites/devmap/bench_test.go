package devmap

import (
	"context"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/cpumeter"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/rounds"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// BenchmarkRedirect has the shape of the seed's table: redirect rate
// veth→veth, "Native" (devmap entry without a program: side A, run twice a
// round for the A/A floor) against "Native + 2nd xdp_prog" (the entry
// carries a devmap program that returns XDP_PASS: side B), in interleaved
// rounds (internal/guest/rounds: go test -count N is N rounds). One op is
// one frame: the live-frames runner (5.18+) sends b.N frames, perCall at a
// time, arriving on in0; they go through xdp_bench_redirect and the devmap
// to a0 and are counted by the sink on a0p. Metrics: tx-pps (frames
// redirected per second), rx-pps (received at the sink), lost/s
// (redirected but not received: dropped in flush or in veth), and what
// each frame redirected cost the guest (cpumeter.Usage.Report).
func BenchmarkRedirect(b *testing.B) {
	rounds.Run(b, func(b *testing.B) { benchRedirect(b, false) }, func(b *testing.B) { benchRedirect(b, true) })
}

func benchRedirect(b *testing.B, withProg bool) {
	const perCall, batch = 1 << 16, 64
	r := newRig(b, false)
	observe.Probe(b, feature.XDPLiveFrames, probeLiveFrames(r.objs.XdpSink))
	var prog *ebpf.Program
	if withProg {
		prog = r.objs.XdpBenchDevmap
	}
	r.setEntry(b, r.objs.Devmap, 0, r.dst[0], prog)
	frame := traffic.Frame([6]byte{2, 0, 0, 0, 0, 1}, 1, 0)

	// Counted from here: the probe's frames may have reached the sink.
	before := r.received(b, r.sink[0])
	meter, err := cpumeter.Start()
	assert.NilError(b, err)
	defer meter.Close()
	b.ResetTimer()
	start := time.Now()
	for sent := 0; sent < b.N; sent += perCall {
		if err := r.runLive(r.objs.XdpBenchRedirect, frame, min(perCall, b.N-sent), batch); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start).Seconds()
	b.StopTimer()
	cpu, err := meter.Stop()
	assert.NilError(b, err)
	sent := uint64(b.N)
	// The sink's NAPI may still be draining a0p's ring: wait until the
	// count settles, then charge the rest as lost.
	get := func() (uint64, error) { return r.received(b, r.sink[0]) - before, nil }
	received, _ := counters.WaitFor(context.Background(), 2*time.Second, get, func(n uint64) bool { return n >= sent })
	a := counters.Accounting{Sent: sent, Received: received, DeviceDrops: sent - received}
	b.Logf("%v (device drops = lost between redirect and the sink); %v of CPU", a, cpu.Busy)
	b.ReportMetric(float64(sent)/elapsed, "tx-pps")
	b.ReportMetric(float64(received)/elapsed, "rx-pps")
	b.ReportMetric(float64(sent-received)/elapsed, "lost/s")
	cpu.Report(b, sent)
}
