package tun

import (
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/vmpath"
)

// BenchmarkTCPStreams is the cost that made seed 000 opt-in: upstream, 8
// parallel iperf3 TCP streams through a tap into a VM fell from 13.5 to
// 9.13 Gbit/s with the stop-queue mode on every tap with a qdisc. N TCP
// streams (1, 2, 4, 8) go from namespace H through the tap, whose
// consumer read(2)s each frame and writes it into the VM's tap in
// namespace G (internal/guest/vmpath), with the flag off (side A, twice a
// round for the A/A floor) against IFF_BACKPRESSURE (side B), the
// kernel's default qdisc on both, as the sides of rounds.Run (vmpath.BenchStreams). One op is
// vmpath.OpTime (10 µs) of streaming: -benchtime 100000x streams for 1 s.
// It reports rx-Mbit/s, cpu-ns/KiB, retrans/s, tun_drops/s and
// qdisc_drops/s (vmpath.Bench). A kernel without the flag skips it whole,
// naming the TUNGETFEATURES probe.
func BenchmarkTCPStreams(b *testing.B) {
	observe.Probe(b, feature.IFFBackpressure, tuntap.ProbeBackpressure())
	vmpath.BenchStreams(b, vmpath.Read)
}
