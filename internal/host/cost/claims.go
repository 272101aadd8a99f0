package cost

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// Better says which way a measure improves.
type Better string

const (
	Higher Better = "higher"
	Lower  Better = "lower"
)

// Claim is what a seed's message says its change costs, and the benchmark
// that does the same work.
type Claim struct {
	Seed feature.Seed
	// Row names the work and the measure ("tap, 1 sending thread: received").
	Row string
	// Package is the suite ("suites/tun"); Bench the benchmark's name up to
	// its side (feature.SideA…), or with Across the whole name; with Each,
	// every benchmark below Bench is a row of its own.
	Package, Bench string
	Each           bool
	// Unit is the metric the benchmark reports, Better the way it improves.
	Unit   string
	Better Better
	// Pct is the claimed change of B against A in percent.
	Pct float64
	// Says is the claim as its source states it, figures and all.
	Says string
	// A and B are the sides: stock and patched.
	A, B string
	// Across is set where no kernel has a switch for the seed: A is a
	// base kernel, B a patched one, in interleaved boots (compare);
	// otherwise A and B are sub-benchmarks of one boot.
	Across bool
	// PerFrame is a per-frame (or per-byte) cost of the same work the
	// benchmark also reports ("cpu-ns/frame", "cpu-ns/KiB"), lower being
	// better, to which the claim converts where the work is CPU-bound
	// (every thread busy): a rate that falls by x % takes 1/(1-x) as much
	// CPU per frame.
	PerFrame string
	// Reached is a measure of the stock side that shows the work reached
	// the path the patch changes (tun's tail-drops: the ring filled, where
	// the flag would have stopped the queue). A row whose stock side
	// measured 0 in every round says so: its patched side ran the stock
	// path, and the row measured no cost of the patch.
	Reached string
	// ScaleBy is a measure of the stock side (in percent) that the
	// claim's size depends on, and ScaleAt its value in the claim's own
	// run: the claim is scaled by their ratio (at most 1). 002's pushback
	// takes back what a stock tap loses: netperf's stock sender lost
	// 85.9 % of its messages, a sender here may lose far less, and then
	// has that much less to be pushed back from.
	ScaleBy string
	ScaleAt float64
}

// 000's table: received Mpps and lost/s, stock against patched with
// fq_codel, through a tap and through vhost-net, 1 and 2 sending threads.
const (
	tapStock  = "flag off, the kernel's default qdisc (stock)"
	tapFlagOn = "IFF_BACKPRESSURE, fq_codel (patched)"
)

// Claims are the seeds' cost claims, in the order reports list them.
var Claims = slices.Concat([]Claim{
	{Seed: feature.Seed000Tun, Row: "tap, 1 sending thread: received", Package: "suites/tun",
		Bench: "BenchmarkTap/threads=1", Unit: "rx-pps", Better: Higher, Pct: -0.8, PerFrame: "cpu-ns/frame",
		Reached: "tun_lost/s",
		Says:    "TAP, 1 thread: received 1.132 → 1.123 Mpps (−0.8 %)", A: tapStock, B: tapFlagOn},
	{Seed: feature.Seed000Tun, Row: "tap, 1 sending thread: lost", Package: "suites/tun",
		Bench: "BenchmarkTap/threads=1", Unit: "lost/s", Better: Lower, Pct: -100,
		Says: "TAP, 1 thread: lost 3.765 Mpps → 0 pps", A: tapStock, B: tapFlagOn},
	{Seed: feature.Seed000Tun, Row: "tap, 2 sending threads: received", Package: "suites/tun",
		Bench: "BenchmarkTap/threads=2", Unit: "rx-pps", Better: Higher, Pct: -3.0, PerFrame: "cpu-ns/frame",
		Reached: "tun_lost/s",
		Says:    "TAP, 2 threads: received 1.115 → 1.081 Mpps (−3.0 %)", A: tapStock, B: tapFlagOn},
	{Seed: feature.Seed000Tun, Row: "tap, 2 sending threads: lost", Package: "suites/tun",
		Bench: "BenchmarkTap/threads=2", Unit: "lost/s", Better: Lower, Pct: change(8.490e6, 391),
		Says: "TAP, 2 threads: lost 8.490 Mpps → 391 pps", A: tapStock, B: tapFlagOn},
	{Seed: feature.Seed000Vhost, Row: "tap + vhost-net, 1 sending thread: received", Package: "suites/vhost",
		Bench: "BenchmarkRX/senders=1", Unit: "rx-pps", Better: Higher, Pct: 1.1, PerFrame: "cpu-ns/frame",
		Reached: "tun_drops/s",
		Says:    "TAP + vhost-net, 1 thread: received 3.857 → 3.901 Mpps (+1.1 %)", A: tapStock, B: tapFlagOn},
	{Seed: feature.Seed000Vhost, Row: "tap + vhost-net, 1 sending thread: lost", Package: "suites/vhost",
		Bench: "BenchmarkRX/senders=1", Unit: "lost/s", Better: Lower, Pct: -100,
		Says: "TAP + vhost-net, 1 thread: lost 0.802 Mpps → 0 pps", A: tapStock, B: tapFlagOn},
	{Seed: feature.Seed000Vhost, Row: "tap + vhost-net, 2 sending threads: received", Package: "suites/vhost",
		Bench: "BenchmarkRX/senders=2", Unit: "rx-pps", Better: Higher, Pct: -3.0, PerFrame: "cpu-ns/frame",
		Reached: "tun_drops/s",
		Says:    "TAP + vhost-net, 2 threads: received 3.664 → 3.555 Mpps (−3.0 %)", A: tapStock, B: tapFlagOn},
	{Seed: feature.Seed000Vhost, Row: "tap + vhost-net, 2 sending threads: lost", Package: "suites/vhost",
		Bench: "BenchmarkRX/senders=2", Unit: "lost/s", Better: Lower, Pct: change(5.330e6, 938),
		Says: "TAP + vhost-net, 2 threads: lost 5.330 Mpps → 938 pps", A: tapStock, B: tapFlagOn},
	{Seed: feature.Seed002, Row: "UDP_STREAM, 1024-byte messages: sender's rate", Package: "suites/tun",
		Bench: "BenchmarkUDPStream", Unit: "tx-Mbit/s", Better: Lower, Pct: change(4679.65, 1687.92),
		ScaleBy: "lost-%", ScaleAt: netperfLost,
		Says: "netperf UDP_STREAM -m 1024: the sender's rate 4679.65 → 1687.92 Mbit/s (the stopped queue pushes " +
			"back; how far depends on how much faster the sender is than the receiver)", A: udpStock, B: udpFlagOn},
	{Seed: feature.Seed002, Row: "UDP_STREAM, 1024-byte messages: receiver's rate", Package: "suites/tun",
		Bench: "BenchmarkUDPStream", Unit: "rx-Mbit/s", Better: Higher, Pct: change(658.99, 740.70),
		Says: "netperf UDP_STREAM -m 1024: the receiver's rate 658.99 → 740.70 Mbit/s", A: udpStock, B: udpFlagOn},
	{Seed: feature.Seed002, Row: "UDP_STREAM, 1024-byte messages: sender's system CPU", Package: "suites/tun",
		Bench: "BenchmarkUDPStream", Unit: "sys-ms/s", Better: Lower, Pct: change(9.62, 5.14),
		ScaleBy: "lost-%", ScaleAt: netperfLost,
		Says: "netperf UDP_STREAM -m 1024: system CPU 9.62 s → 5.14 s in 10 s", A: udpStock, B: udpFlagOn},
	{Seed: feature.Seed003, Row: "contended qdisc: received", Package: "suites/qdisc",
		Bench: "BenchmarkContention/veth_xdp_fast/pfifo", Each: true, Across: true, Unit: "rx-pps", Better: Higher,
		Pct:  change(52191462.56, 59363099.96),
		Says: "IDPF 200 Gbit, 32 TX queues, 120-byte UDP: 52.19 → 59.36 M packets/s sent (+13 %)",
		A:    "base kernel (without 003)", B: "patched kernel"},
	{Seed: feature.Seed003, Row: "contended qdisc: NET_TX softirq runs per packet", Package: "suites/qdisc",
		Bench: "BenchmarkContention/veth_xdp_fast/pfifo", Each: true, Across: true, Unit: "txruns/pkt", Better: Lower,
		Says: "no NET_TX softirq forced when another CPU will run the queue (no figure: no more than the base)",
		A:    "base kernel (without 003)", B: "patched kernel"},
	{Seed: feature.Seed004, Row: "redirect to veth: a devmap program's cost", Package: "suites/devmap",
		Bench: "BenchmarkRedirect", Unit: "tx-pps", Better: Higher, Pct: change(12.0, 9.4), PerFrame: "cpu-ns/frame",
		Says: "xdp_redirect_map i40e→veth with the patch: 12.0 Mpps native, 9.4 Mpps with a 2nd xdp_prog (−21.7 %; " +
			"11.7 → 9.8 before it)",
		A: "devmap entry without a program (native)", B: "the entry carries a devmap program (XDP_PASS)"},
},
	tcpStreams(feature.Seed000Tun, "suites/tun", "read()"),
	tcpStreams(feature.Seed000Vhost, "suites/vhost", "vhost-net"))

// The TCP rows: the cost that made 000 opt-in, which its table does not
// show. The seed claims at most -3.0 % (its table's worst row); upstream
// measured -32 % for 8 streams once the mode was on for every tap.
const (
	tcpFlagOn = "IFF_BACKPRESSURE, the kernel's default qdisc"
	tcpSays   = "at most −3.0 % (the seed's table, 2 sending threads); upstream measured " +
		"13.5 → 9.13 Gbit/s (−32 %) for 8 parallel iperf3 TCP streams through a tap into a VM"
)

// tcpStreams are the claims of one suite's BenchmarkTCPStreams: one row
// per stream count, through a tap whose consumer is via.
func tcpStreams(seed feature.Seed, pkg, via string) []Claim {
	var out []Claim
	for _, n := range []int{1, 2, 4, 8} {
		streams := "streams"
		if n == 1 {
			streams = "stream"
		}
		out = append(out, Claim{Seed: seed, Row: fmt.Sprintf("TCP, %d %s through a tap (%s)", n, streams, via),
			Package: pkg, Bench: fmt.Sprintf("BenchmarkTCPStreams/streams=%d", n), Unit: "rx-Mbit/s",
			Better: Higher, Pct: -3.0, PerFrame: "cpu-ns/KiB", Reached: "tun_drops/s", Says: tcpSays, A: tapStock,
			B: tcpFlagOn})
	}
	return out
}

// 002's netperf run: no kernel carries 002, but 7.3's flag-on path is its
// stop at the limit for a tap with a qdisc. Its stock receiver got 804441
// of the 5712540 messages sent: 85.9 % were lost.
const (
	netperfLost = (1 - 804441.0/5712540) * 100
	udpStock    = "flag off, the kernel's default qdisc (tail-drop at the ring)"
	udpFlagOn   = "IFF_BACKPRESSURE, the kernel's default qdisc (002's stop at the limit)"
)

// change is the change from a to b in percent.
func change(a, b float64) float64 { return (b/a - 1) * 100 }

// Benchmarks is the go test -bench pattern that runs the benchmarks of the
// claims measured in one boot (or with across, of those across kernels).
func Benchmarks(across bool) string {
	var tops []string
	for _, c := range Claims {
		top, _, _ := strings.Cut(c.Bench, "/")
		if c.Across == across && !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	return "^(" + strings.Join(tops, "|") + ")$"
}

// Packages are the suites whose benchmarks measure claims made in one
// boot (or with across, across kernels).
func Packages(across bool) []string {
	var out []string
	for _, c := range Claims {
		if c.Across == across && !slices.Contains(out, c.Package) {
			out = append(out, c.Package)
		}
	}
	return out
}
