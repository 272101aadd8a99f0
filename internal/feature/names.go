package feature

// Feature is a kernel capability a suite probes. Every probe names one of
// the constants below (a unit test holds the suites to that), and the
// expectation file (kernels/expectations) says which kernel has which.
type Feature string

const (
	// IFFBackpressure is tun's opt-in stop-queue mode (seed 000 as merged
	// in 7.3): TUNGETFEATURES has 0x80.
	IFFBackpressure Feature = "IFF_BACKPRESSURE"
	// VhostNet is /dev/vhost-net.
	VhostNet Feature = "vhost-net"
	// FqCodel is the fq_codel qdisc (built in or sch_fq_codel).
	FqCodel Feature = "fq_codel"
	// QdiscDeferList is the member of struct Qdisc that seed 003's fast
	// path reads, in kernel BTF.
	QdiscDeferList Feature = "Qdisc.defer_list"
	// DropReasons is enum skb_drop_reason in kernel BTF (5.17+).
	DropReasons Feature = "skb_drop_reason"
	// DropReasonFullRing is SKB_DROP_REASON_FULL_RING (tun's ring full).
	DropReasonFullRing Feature = "SKB_DROP_REASON_FULL_RING"
	// DropReasonQdiscBurst is SKB_DROP_REASON_QDISC_BURST_DROP (defer_list
	// over net.core.qdisc_max_burst).
	DropReasonQdiscBurst Feature = "SKB_DROP_REASON_QDISC_BURST_DROP"
	// DropReasonNoSocket is SKB_DROP_REASON_NO_SOCKET, the reason
	// internal/guest/dropmon's own test provokes.
	DropReasonNoSocket Feature = "SKB_DROP_REASON_NO_SOCKET"
	// XDPLiveFrames is BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES
	// (5.18+).
	XDPLiveFrames Feature = "BPF_F_TEST_XDP_LIVE_FRAMES"
	// BPFBroadcast is bpf_redirect_map with BPF_F_BROADCAST (5.14+).
	BPFBroadcast Feature = "BPF_F_BROADCAST"
	// TCClsact is the clsact qdisc (sch_ingress).
	TCClsact Feature = "clsact"
	// TCBPFFilter is the tc bpf classifier (cls_bpf).
	TCBPFFilter Feature = "cls_bpf"
	// GenericDevmapProg is generic (SKB-mode) XDP accepting a program whose
	// devmaps carry programs (5.15+).
	GenericDevmapProg Feature = "generic-devmap-prog"
)

// Features lists every Feature with the seeds its absence makes absent: a
// kernel without IFF_BACKPRESSURE cannot have seed 000, one without
// vhost-net cannot have 000's vhost side, one without Qdisc.defer_list
// cannot have seed 003. A feature that gates no seed only limits what can be
// tested.
var Features = map[Feature][]Seed{
	IFFBackpressure:      {Seed000Tun, Seed000Vhost},
	VhostNet:             {Seed000Vhost},
	FqCodel:              nil,
	QdiscDeferList:       {Seed003},
	DropReasons:          nil,
	DropReasonFullRing:   nil,
	DropReasonQdiscBurst: nil,
	DropReasonNoSocket:   nil,
	XDPLiveFrames:        nil,
	BPFBroadcast:         nil,
	TCClsact:             nil,
	TCBPFFilter:          nil,
	GenericDevmapProg:    nil,
}

// Seed is one patch xmitcheck validates (../shared/seeds), split where one
// patch has two sides that are tested apart.
type Seed string

const (
	// Seed000Tun: tun/tap stops the queue on a full ring instead of
	// tail-dropping when a qdisc is present (IFF_BACKPRESSURE, 7.3).
	Seed000Tun Seed = "000-tun"
	// Seed000Vhost: vhost-net wakes the stopped queue as it consumes.
	Seed000Vhost Seed = "000-vhost"
	// Seed002: tun stops its queue at txqueuelen by default (2014, never
	// merged): no opt-in flag.
	Seed002 Seed = "002"
	// Seed003: __netif_schedule() returns early while q->defer_list is not
	// empty (7.2).
	Seed003 Seed = "003"
	// Seed004: the devmap program runs at bulk-queue flush (5.14).
	Seed004 Seed = "004"
)

// Seeds lists every Seed, in table order, with the suite that tests it
// (suites/SUITE) and its one-line title.
var Seeds = []struct {
	Seed  Seed
	Suite string
	Title string
}{
	{Seed000Tun, "tun", "tun/tap: a full ring stops the queue when a qdisc is present"},
	{Seed000Vhost, "vhost", "vhost-net: the consumer wakes the stopped queue"},
	{Seed002, "tun", "tun: stop the queue at txqueuelen by default (2014)"},
	{Seed003, "qdisc", "__netif_schedule() fast path while defer_list is not empty"},
	{Seed004, "devmap", "devmap programs run at bulk-queue flush"},
}

// SuiteSeeds lists the seeds suites/suite tests, in table order.
func SuiteSeeds(suite string) []Seed {
	var out []Seed
	for _, s := range Seeds {
		if s.Suite == suite {
			out = append(out, s.Seed)
		}
	}
	return out
}

// Issue is a known kernel defect that a test reports as an expected
// failure (XFAIL) where the expectation file lists it for the kernel.
type Issue string

const (
	// IssueDevmapSameDevice: the bulk queue of a device latches the
	// program of its first frame, so two devmap entries on one device with
	// different programs run the first one's for the whole bulk, and an
	// entry after a plain bpf_redirect() to that device runs none
	// (docs/findings/devmap-same-device.md).
	IssueDevmapSameDevice Issue = "devmap-same-device"
	// IssueLiveFramesClone: BPF_PROG_TEST_RUN live frames misplace
	// broadcast copies (6.1; fixed in 6.3).
	IssueLiveFramesClone Issue = "live-frames-clone"
	// IssueGenericCloneShared: generic XDP's broadcast copies share one
	// buffer, so a devmap program that rewrites its copy rewrites them all
	// (6.1; 6.12 copies a cloned skb before the entry's program).
	IssueGenericCloneShared Issue = "generic-clone-shared"
	// IssueQdiscBurstUncounted: frames __dev_xmit_skb() frees with
	// QDISC_BURST_DROP (defer_list over net.core.qdisc_max_burst, 7.2+)
	// are in no qdisc or device counter
	// (docs/findings/qdisc-burst-drop.md).
	IssueQdiscBurstUncounted Issue = "qdisc-burst-uncounted"
)

// Issues lists every Issue with the seed whose tests meet it.
var Issues = map[Issue]Seed{
	IssueDevmapSameDevice:    Seed004,
	IssueLiveFramesClone:     Seed004,
	IssueGenericCloneShared:  Seed004,
	IssueQdiscBurstUncounted: Seed003,
}

// FeatureNamed returns the feature called name, if Features has it: how a
// user's text (an expectation) becomes a Feature.
func FeatureNamed(name string) (Feature, bool) {
	_, ok := Features[Feature(name)]
	return Feature(name), ok
}
