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
		"of the NAPI cycle, so when two entries point at one device with different programs, every frame of the bulk " +
		"runs the program of the entry enqueued first and the other entry's program never runs for its frames. " +
		"Before the seed (5.10) each frame ran its own entry's program at enqueue.",
	feature.IssueLiveFramesClone: "" +
		"in BPF_PROG_TEST_RUN's live-frames mode the xdp_frame sits 40 bytes before data_hard_start " +
		"(struct xdp_page_head), so xdpf_clone, which assumes the frame at data_hard_start, copies from 40 bytes too early " +
		"and every broadcast copy but the last is shifted garbage. A bug of the test runner, not of seed 004: fixed in 6.3 " +
		"by \"bpf, test_run: fix &xdp_frame misplacement for LIVE_FRAMES\", whose 6.1 stable backport was reverted; " +
		"the veth driver carries the broadcast test on such kernels.",
}

// expectedFailure reports the known issue as observed, with its
// explanation.
func expectedFailure(tb testing.TB, issue feature.Issue, observed string) {
	tb.Helper()
	tb.Log(KnownIssues[issue])
	feature.Known(tb, issue, observed)
}
