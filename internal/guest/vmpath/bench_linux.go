package vmpath

import (
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/cpumeter"
	"github.com/xmitcheck/xmitcheck/internal/guest/rounds"
)

// BenchStreams runs Bench for 1, 2, 4 and 8 TCP streams (sub-benchmarks
// streams=N) through consumer, with offloads, as the sides of rounds.Run:
// the flag off (side A, twice a round for the A/A floor) against
// IFF_BACKPRESSURE (side B), the kernel's default qdisc on both.
func BenchStreams(b *testing.B, consumer Consumer) {
	stock := Config{Consumer: consumer, Offload: true}
	patched := stock
	patched.Backpressure = true
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			rounds.Run(b, func(b *testing.B) { Bench(b, stock, n) },
				func(b *testing.B) { Bench(b, patched, n) })
		})
	}
}

// OpTime is the streaming one op of Bench stands for: b.N ops stream for
// b.N × OpTime, so -benchtime 100000x streams for 1 s.
const OpTime = 10 * time.Microsecond

// Bench measures n TCP streams from H to G across a path of cfg, each
// writing as fast as it can for b.N × OpTime, and reports rx-Mbit/s (what
// the receivers read in that window, per second of it); what each KiB
// read cost the guest's CPUs over the window, cpu-ns/KiB and, where the
// vCPU has a PMU, instructions/KiB (internal/guest/cpumeter); the
// senders' retransmitted segments (retrans/s) and HostTap's drops, by tun
// (tun_drops/s) and by its qdisc (qdisc_drops/s), per second of the
// window. ns/op is reported as 0: an op is a slice of time. After the
// window every receiver must read exactly what its sender wrote.
func Bench(b *testing.B, cfg Config, n int) {
	p := New(b, cfg)
	s := p.Streams(b, n)
	c0, err := p.Counters()
	assert.NilError(b, err)
	meter, err := cpumeter.Start()
	assert.NilError(b, err)
	defer meter.Close()
	b.ResetTimer()
	w, sendErr := s.Send(time.Duration(b.N) * OpTime)
	b.StopTimer()
	cpu, err := meter.Stop()
	assert.NilError(b, err)
	c1, err := p.Counters()
	assert.NilError(b, err)
	assert.NilError(b, sendErr, "%d streams sending for %v", n, time.Duration(b.N)*OpTime)
	s.Finish()
	report(b, w, cpu, c0, c1)
	b.Logf("%v, %d streams, qdisc %s: %d bytes read in %v, %d retransmitted; tun dropped %d, the qdisc %d "+
		"(requeues %d); %v of CPU", cfg, n, c1.Qdisc.Kind, w.Bytes, w.Took.Round(time.Millisecond), w.Retrans,
		c1.Link.TxDropped-c0.Link.TxDropped, c1.Qdisc.Drops-c0.Qdisc.Drops, c1.Qdisc.Requeues-c0.Qdisc.Requeues, cpu.Busy)
}

// report reports the window's metrics; c0 and c1 are HostTap's counters
// at its start and end.
func report(b *testing.B, w Window, cpu cpumeter.Usage, c0, c1 Counters) {
	secs := w.Took.Seconds()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(w.Mbits(), "rx-Mbit/s")
	b.ReportMetric(float64(w.Retrans)/secs, "retrans/s")
	b.ReportMetric(float64(c1.Link.TxDropped-c0.Link.TxDropped)/secs, "tun_drops/s")
	b.ReportMetric(float64(c1.Qdisc.Drops-c0.Qdisc.Drops)/secs, "qdisc_drops/s")
	if w.Bytes == 0 {
		return
	}
	kib := float64(w.Bytes) / 1024
	b.ReportMetric(float64(cpu.Busy.Nanoseconds())/kib, "cpu-ns/KiB")
	if cpu.HasInstructions {
		b.ReportMetric(float64(cpu.Instructions)/kib, "instructions/KiB")
	}
}
