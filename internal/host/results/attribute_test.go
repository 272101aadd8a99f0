package results

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// tunCloseWarn is a WARN_ON in tun_net_close as a 7.3 console prints it,
// taken down from qdisc's TestReactivate (link down).
var tunCloseWarn = []string{
	"[   41.201337] WARNING: CPU: 1 PID: 212 at drivers/net/tun.c:1029 tun_net_close+0x9e/0xb0",
	"[   41.201901] CPU: 1 UID: 0 PID: 212 Comm: qdisc.test Not tainted 7.3.4 #1 PREEMPT(voluntary)",
	"[   41.202410] RIP: 0010:tun_net_close+0x9e/0xb0",
	"[   41.203122] Call Trace:",
	"[   41.203254]  <TASK>",
	"[   41.203390]  ? __warn+0x89/0x130",
	"[   41.203530]  ? tun_net_close+0x9e/0xb0",
	"[   41.203690]  ? report_bug+0x164/0x190",
	"[   41.203840]  __dev_close_many+0xb4/0x170",
	"[   41.203990]  __dev_change_flags+0xf3/0x230",
	"[   41.204150]  netif_change_flags+0x26/0x70",
	"[   41.204300]  do_setlink.isra.0+0x357/0x1290",
	"[   41.204460]  </TASK>",
	"[   41.204590] ---[ end trace 0000000000000000 ]---",
}

func TestReportSeed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report []string
		seed   feature.Seed
		code   string
	}{
		{"the warning's file", tunCloseWarn, feature.Seed000Tun, "drivers/net/tun.c"},
		{"6.18's warning line", []string{"WARNING: kernel/bpf/devmap.c:390 at bq_xmit_all+0x1c/0x2f0, CPU#1: x/7"},
			feature.Seed004, "kernel/bpf/devmap.c"},
		{"a generic warning called from the seed's code", []string{
			"WARNING: CPU: 0 PID: 9 at net/core/dev.c:3200 netif_tx_wake_queue+0x20/0x40",
			"Call Trace:", " <TASK>", " ? __warn+0x89/0x130", " vhost_net_buf_produce+0x10/0x50 [vhost_net]",
			" handle_tx_copy+0x1a/0x300 [vhost_net]"}, feature.Seed000Vhost, "vhost_net_buf_produce"},
		{"an oops at the seed's function", []string{"BUG: kernel NULL pointer dereference, address: 0000000000000008",
			"RIP: 0010:__qdisc_run+0x41/0x5c0"}, feature.Seed003, "__qdisc_run"},
		{"a seed's function deep in the trace names nothing", []string{
			"WARNING: CPU: 0 PID: 9 at mm/slub.c:1 kfree+0x1/0x2", "Call Trace:",
			" a+0x1/0x2", " b+0x1/0x2", " c+0x1/0x2", " d+0x1/0x2", " net_tx_action+0x1/0x2"}, "", ""},
		{"unreliable frames name nothing", []string{"WARNING: CPU: 0 PID: 9 at mm/slub.c:1 kfree+0x1/0x2",
			"Call Trace:", " ? tun_get_user+0x1/0x2"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, code := reportSeed(tc.report)
			assert.Check(t, is.Equal(s, tc.seed))
			assert.Check(t, is.Equal(code, tc.code))
		})
	}
}

// TestReportNamesItsSeed: a warning in tun's close path during a test of
// seed 003 makes 000-tun BROKEN, with the report and the test it came
// in; the test still fails, and 003 is not judged by it (error, its other
// tests passing); a report that names no seed's code stays the running
// test's seed's.
func TestReportNamesItsSeed(t *testing.T) {
	tests := [][]string{
		{"TestFastPath", "pass", tag(feature.Seed003), shows(feature.Seed003)},
		{"TestReactivate", "pass", tag(feature.Seed003)},
		{"TestBackpressure", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)},
	}
	r := stream(nil, tests...)
	r.AttachKernelAt(pkg, "TestReactivate", "WARNING", "", tunCloseWarn)
	r.Judge(expect.Expectation{}, "test")
	tun, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Broken))
	assert.Check(t, is.Equal(tun.Why, "a report in its code, during suites/tun.TestReactivate: kernel WARNING: "+
		"WARNING: CPU: 1 PID: 212 at drivers/net/tun.c:1029 tun_net_close+0x9e/0xb0 (drivers/net/tun.c)"))
	q, _ := r.verdict(feature.Seed003)
	assert.Check(t, is.Equal(q.State, Error))
	assert.Check(t, is.Equal(q.Why, "suites/tun.TestReactivate: not judged: a kernel report in the code of "+
		"000-tun ended it (judged there)"))
	assert.Check(t, is.Equal(r.byName[key(pkg, "TestReactivate")].Status, Fail), "the running test still fails")

	r = stream(nil, tests...)
	r.AttachKernelAt(pkg, "TestReactivate", "WARNING", "", []string{"WARNING: CPU: 0 PID: 1 at mm/slub.c:1 x+0x1/0x2"})
	r.Judge(expect.Expectation{}, "test")
	q, _ = r.verdict(feature.Seed003)
	assert.Check(t, is.Equal(q.State, Broken), "a report in no seed's code is the running test's seed's")
	tun, _ = r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Present))

	r = stream(nil, tests...)
	r.AttachKernelAt(pkg, "", "WARNING", "after the binary exited", tunCloseWarn)
	r.Judge(expect.Expectation{}, "test")
	tun, _ = r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Broken))
	assert.Check(t, is.Contains(tun.Why, "during suites/tun (the test binary)"))
	q, _ = r.verdict(feature.Seed003)
	assert.Check(t, is.Equal(q.State, Present), "a report outside the tests in another seed's code is not 003's")
	assert.Check(t, is.Len(r.Orphans, 0))
}

// TestReportThroughKmsg: a subtest that its kmsg watcher failed (a Kernel
// record) failed on the reports of the window it ran in, its parent's: a
// warning there in tun's code leaves its seed 003 unjudged.
func TestReportThroughKmsg(t *testing.T) {
	taint := feature.Record{Kernel: true, Why: "kernel taint went from 0x0 to 0x200"}.String()
	r := stream(nil,
		[]string{"TestFastPath", "pass", tag(feature.Seed003), shows(feature.Seed003)},
		[]string{"TestReactivate", "fail", tag(feature.Seed003)},
		[]string{"TestReactivate/tap/link_down_up", "fail", taint},
		[]string{"TestReactivate/veth/link_down_up", "pass"},
	)
	r.AttachKernelAt(pkg, "TestReactivate", "WARNING", "", tunCloseWarn)
	r.Judge(expect.Expectation{}, "test")
	tun, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Broken))
	q, _ := r.verdict(feature.Seed003)
	assert.Check(t, is.Equal(q.State, Error), "%s", q.Why)
	assert.Check(t, is.Contains(q.Why, "not judged: a kernel report in the code of 000-tun ended it"))
}
