package vhost

import (
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
	"github.com/xmitcheck/xmitcheck/internal/guest/vmpath"
)

// BenchmarkTCPStreams is the cost that made seed 000 opt-in, through
// vhost-net: upstream, 8 parallel iperf3 TCP streams through a tap into a
// VM fell from 13.5 to 9.13 Gbit/s with the stop-queue mode on every tap
// with a qdisc. N TCP streams (1, 2, 4, 8) go from namespace H through
// the tap, the backend of a userspace vhost-net guest that writes each
// frame it receives into the VM's tap in namespace G and transmits the
// VM's frames (internal/guest/vmpath), with the flag off (side A, twice a
// round for the A/A floor) against IFF_BACKPRESSURE (side B), the
// kernel's default qdisc on both, as the sides of rounds.Run (vmpath.BenchStreams). One op is
// vmpath.OpTime (10 µs) of streaming: -benchtime 100000x streams for 1 s.
// It reports rx-Mbit/s, cpu-ns/KiB, retrans/s, tun_drops/s and
// qdisc_drops/s (vmpath.Bench). A kernel without the flag or without
// vhost-net skips it whole, naming the probe (TUNGETFEATURES,
// /dev/vhost-net).
func BenchmarkTCPStreams(b *testing.B) {
	observe.Probe(b, feature.IFFBackpressure, tuntap.ProbeBackpressure())
	observe.Probe(b, feature.VhostNet, vhostnet.Probe())
	vmpath.BenchStreams(b, vmpath.VhostNet)
}
