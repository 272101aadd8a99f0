package devmap

import (
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// KnownIssues explains the kernel defects this suite meets. A test that
// observes exactly the documented defect reports it through feature.Known:
// an expected failure (XFAIL) on the kernels the expectation file lists it
// for, a failure anywhere else; any other wrong behaviour fails, and a
// kernel without the defect passes.
var KnownIssues = map[feature.Issue]string{
	feature.IssueDevmapSameDevice: "" +
		"seed 004 says the flush sorts frames by destination devmap entry and runs that entry's program over them; " +
		"but the bulk queue is per device (dev->xdp_bulkq) and bq_enqueue latches bq->xdp_prog from the first frame " +
		"the queue gets in the NAPI cycle, so when two ways lead to one device — two devmap entries with different programs, " +
		"or an entry with a program and bpf_redirect (which enqueues with none) — every frame of the bulk runs the program " +
		"latched first: the other entry's program never runs for its frames, frames redirected without a devmap run the " +
		"entry's program, or, when such a frame came first, the entry's program is skipped for all. " +
		"Before the seed (5.10) each frame ran its own entry's program at enqueue. See docs/findings/devmap-same-device.md.",
	feature.IssueLiveFramesClone: "" +
		"in BPF_PROG_TEST_RUN's live-frames mode the xdp_frame sits 40 bytes before data_hard_start " +
		"(struct xdp_page_head), so xdpf_clone, which assumes the frame at data_hard_start, copies from 40 bytes too early " +
		"and every broadcast copy but the last is shifted garbage. A bug of the test runner, not of seed 004: fixed in 6.3 " +
		"by \"bpf, test_run: fix &xdp_frame misplacement for LIVE_FRAMES\", whose 6.1 stable backport was reverted; " +
		"the veth driver carries the broadcast test on such kernels.",
	feature.IssueGenericCloneShared: "" +
		"generic XDP's broadcast (dev_map_redirect_multi, dev_map_generic_redirect) hands every destination an skb_clone " +
		"of the frame and runs the entry's program on it without a private copy, so a program that rewrites its copy " +
		"rewrites every destination's. A kernel defect of 6.1's generic path, not of seed 004: 6.12's " +
		"dev_map_generic_redirect copies a cloned skb before the entry's program.",
}

// expectedFailure reports the known issue as observed, with its
// explanation. Callers decide it last, once every frame is accounted for;
// a check that failed before means the test saw more than the documented
// defect, and it fails plainly.
func expectedFailure(tb testing.TB, issue feature.Issue, observed string) {
	tb.Helper()
	if tb.Failed() {
		tb.Fatalf("%s, but other checks failed above: not the known issue %s alone", observed, issue)
	}
	tb.Log(KnownIssues[issue])
	feature.Known(tb, issue, observed)
}
