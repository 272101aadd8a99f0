package results

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// kcsanRace is a KCSAN report as kernel/kcsan/report.c prints it, of a
// race a missing barrier allows: the consumer's access, delayed past where
// its barrier was, meets the producer's.
var kcsanRace = []string{
	"[   88.120311] BUG: KCSAN: data-race in __tun_wake_queue / tun_net_xmit",
	"[   88.120602] ",
	"[   88.120700] read to 0xffff888004a1c0c8 of 8 bytes by task 231 on cpu 0:",
	"[   88.120912]  tun_net_xmit+0x5c2/0x8a0",
	"[   88.121040]  dev_hard_start_xmit+0x130/0x3c0",
	"[   88.121170]  sch_direct_xmit+0x1a8/0x5e0",
	"[   88.121300] ",
	"[   88.121380] write (reordered) to 0xffff888004a1c0c8 of 8 bytes by task 233 on cpu 1:",
	"[   88.121590]  tun_ring_consume+0x1f1/0x2b0",
	"[   88.121720]  tun_do_read+0x4d/0x9a0",
	"[   88.121850]   |",
	"[   88.121930]   +-> reordered to: __tun_wake_queue+0x8e/0x1d0",
	"[   88.122100] ",
	"[   88.122180] Reported by Kernel Concurrency Sanitizer on:",
	"[   88.122330] CPU: 1 UID: 0 PID: 233 Comm: tun.test Not tainted 7.3.4 #1 PREEMPT(voluntary)",
	"[   88.122610] ==================================================================",
}

// kcsanElsewhere is a race in code no seed changed, which every kernel
// has.
var kcsanElsewhere = []string{
	"[   12.000001] BUG: KCSAN: data-race in mod_timer / run_timer_softirq",
	"[   12.000002] ",
	"[   12.000003] write to 0xffff88803ec1a6d8 of 8 bytes by interrupt on cpu 1:",
	"[   12.000004]  run_timer_softirq+0x1b7/0x430",
	"[   12.000005]  handle_softirqs+0x112/0x3a0",
	"[   12.000006] ",
	"[   12.000007] read to 0xffff88803ec1a6d8 of 8 bytes by task 1 on cpu 0:",
	"[   12.000008]  mod_timer+0x2e/0x50",
	"[   12.000009]  sk_reset_timer+0x1c/0x60",
	"[   12.000010] ==================================================================",
}

// leak is a kmemleak record as the guest's scan after a binary writes it
// to the kernel log.
func leak(fn string) []string {
	return []string{
		"[   95.000001] unreferenced object 0xffff888005d1e600 (size 232):",
		"[   95.000002]   comm \"tun.test\", pid 231, jiffies 4294760117",
		"[   95.000003]   hex dump (first 32 bytes):",
		"[   95.000004]     00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................",
		"[   95.000005]   backtrace (crc 8a3f0c11):",
		"[   95.000006]     kmem_cache_alloc_node_noprof+0x2a6/0x3a0",
		"[   95.000007]     __alloc_skb+0x21b/0x2d0",
		"[   95.000008]     " + fn + "+0x1c2/0x3e0",
		"[   95.000009]     packet_sendmsg+0x11f4/0x1e80",
	}
}

// TestSanitizerNamesItsSeed: a KCSAN race in tun's code makes 000-tun
// BROKEN with the report, whichever test it came in, and fails that test.
func TestSanitizerNamesItsSeed(t *testing.T) {
	s, code := reportSeed(kcsanRace)
	assert.Check(t, is.Equal(s, feature.Seed000Tun))
	assert.Check(t, is.Equal(code, "__tun_wake_queue"))

	r := stream(nil,
		[]string{"TestFastPath", "pass", tag(feature.Seed003), shows(feature.Seed003)},
		[]string{"TestBackpressure", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)},
		[]string{"TestRaceSmallRing", "pass", tag(feature.Seed000Tun)})
	r.AttachKernelAt(pkg, "TestRaceSmallRing", "KCSAN", "", kcsanRace)
	r.Judge(expect.Expectation{}, "test")
	tun, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Broken))
	assert.Check(t, is.Contains(tun.Why, "during suites/tun.TestRaceSmallRing: kernel KCSAN: "+
		"BUG: KCSAN: data-race in __tun_wake_queue / tun_net_xmit (__tun_wake_queue)"))
	assert.Check(t, is.Equal(r.byName[key(pkg, "TestRaceSmallRing")].Status, Fail))
	assert.Check(t, is.Len(r.Noted, 0))
}

// TestSanitizerElsewhereNoted: a sanitizer's report in no seed's code is
// noted, with where it came and why, and the test that held it ends as it
// ended itself; a WARNING there still fails the test and its seed.
func TestSanitizerElsewhereNoted(t *testing.T) {
	tests := [][]string{
		{"TestFastPath", "pass", tag(feature.Seed003), shows(feature.Seed003)},
		{"TestBackpressure", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)},
	}
	r := stream(nil, tests...)
	r.AttachKernelAt(pkg, "TestBackpressure", "KCSAN", "", kcsanElsewhere)
	r.AttachKernelAt(pkg, "", "kmemleak", "after the binary exited", leak("packet_snd"))
	r.Judge(expect.Expectation{}, "test")
	r.Judge(expect.Expectation{}, "test") // judging again notes nothing twice
	tun, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Present))
	assert.Check(t, is.Equal(r.byName[key(pkg, "TestBackpressure")].Status, Pass))
	assert.Check(t, is.DeepEqual(r.Noted, []string{
		"suites/tun.TestBackpressure: BUG: KCSAN: data-race in mod_timer / run_timer_softirq " +
			"(in no seed's code: noted, not judged)",
		"suites/tun (the test binary): unreferenced object 0xffff888005d1e600 (size 232): " +
			"(in no seed's code: noted, not judged)",
	}))

	r = stream(nil, tests...)
	r.AttachKernelAt(pkg, "TestBackpressure", "WARNING", "", []string{"WARNING: CPU: 0 PID: 1 at mm/slub.c:1 x+0x1/0x2"})
	r.Judge(expect.Expectation{}, "test")
	tun, _ = r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Broken), "a warning in no seed's code is still the running test's seed's")
}

// TestLeakNamesItsSeed: a leak whose allocation, past the allocator, is in
// a seed's code makes that seed BROKEN.
func TestLeakNamesItsSeed(t *testing.T) {
	s, code := reportSeed(leak("tun_alloc_skb"))
	assert.Check(t, is.Equal(s, feature.Seed000Tun))
	assert.Check(t, is.Equal(code, "tun_alloc_skb"))
	r := stream(nil, []string{"TestBackpressure", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)})
	r.AttachKernelAt(pkg, "", "kmemleak", "after the binary exited", leak("tun_alloc_skb"))
	r.Judge(expect.Expectation{}, "test")
	tun, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Broken))
	assert.Check(t, is.Contains(tun.Why, "during suites/tun (the test binary): kernel kmemleak, after the binary exited"))
}

// TestBenignRace: a race benign.go lists is noted with its reason; the
// same pair with a reordered access is judged.
func TestBenignRace(t *testing.T) {
	defer func(old []benignRace) { benignRaces = old }(benignRaces)
	benignRaces = []benignRace{{readers: []string{"tun_net_xmit"}, others: []string{"__tun_wake_queue"},
		why: "a test reason"}}
	plain := []string{"BUG: KCSAN: data-race in __tun_wake_queue / tun_net_xmit",
		"read to 0xffff888004a1c0c8 of 8 bytes by task 231 on cpu 0:", " tun_net_xmit+0x5c2/0x8a0"}
	assert.Check(t, is.Equal(benign(plain), "a test reason"))
	assert.Check(t, is.Equal(benign(kcsanRace), ""), "an access reordered in a function not the race's reader")
	unknown := []string{"BUG: KCSAN: data-race in tun_net_xmit+0x5c2/0x8a0",
		"race at unknown origin, with read to 0xffff888004a1c0c8 of 8 bytes by task 231 on cpu 0:"}
	assert.Check(t, is.Equal(benign(unknown), "a test reason"), "the writer not seen")
	other := []string{"BUG: KCSAN: data-race in tun_net_close / tun_net_xmit"}
	assert.Check(t, is.Equal(benign(other), ""), "a function the race does not list")

	r := stream(nil, []string{"TestBackpressure", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)})
	r.AttachKernelAt(pkg, "TestBackpressure", "KCSAN", "", plain)
	r.Judge(expect.Expectation{}, "test")
	tun, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Present))
	assert.Check(t, is.DeepEqual(r.Noted, []string{"suites/tun.TestBackpressure: BUG: KCSAN: data-race in " +
		"__tun_wake_queue / tun_net_xmit (a known benign race: a test reason)"}))
}

// TestReportsWhileNoBinaryRan: a sanitizer's report before the first
// binary, in no seed's code, is noted and leaves no test behind.
func TestReportsWhileNoBinaryRan(t *testing.T) {
	r := stream(nil, []string{"TestBackpressure", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)})
	r.AttachKernel("", "KCSAN", kcsanElsewhere)
	r.Judge(expect.Expectation{}, "test")
	assert.Check(t, is.Len(r.Orphans, 0))
	assert.Check(t, is.Equal(r.Counts(), Tally{Pass: 1}))
	assert.Check(t, is.Len(r.Noted, 1))
	assert.Check(t, is.Contains(r.Noted[0], "while no test binary ran: BUG: KCSAN: data-race in mod_timer"))
}

// TestQdiscStateRaceNoted: the race build:7.3.4+kcsan reported in
// TestRaceSmallRing (tun), as its console printed it: tun's read() wakes
// the queue while the qdisc run reads its state plainly. It is in
// benignRaces, so it is noted and judges neither 000-tun nor 003.
func TestQdiscStateRaceNoted(t *testing.T) {
	report := []string{
		"[  171.523414] BUG: KCSAN: data-race in netif_tx_wake_queue / qdisc_maybe_clear_missed",
		"[  171.523414] ",
		"[  171.523414] read-write (marked) to 0xff11000000abe710 of 8 bytes by task 58 on cpu 1:",
		"[  171.523414]  netif_tx_wake_queue+0x37/0x70",
		"[  171.523414]  __tun_wake_queue+0x1bc/0x1e0",
		"[  171.523414]  tun_do_read+0x9ff/0x12e0",
		"[  171.523414]  tun_chr_read_iter+0xe1/0x170",
		"[  171.523414] ",
		"[  171.523414] read to 0xff11000000abe710 of 8 bytes by task 61 on cpu 0:",
		"[  171.523414]  qdisc_maybe_clear_missed+0x51/0xa0",
		"[  171.523414]  __qdisc_run+0x76e/0x9d0",
		"[  171.523414]  __dev_queue_xmit+0xfd1/0x18f0",
		"[  171.523414]  packet_xmit+0x106/0x170",
		"[  171.523414] ",
		"[  171.523414] Reported by Kernel Concurrency Sanitizer on:",
		"[  171.523414] ==================================================================",
	}
	s, _ := reportSeed(report)
	assert.Check(t, s != "", "the report names a seed's code (tun's wake, the qdisc run): only the list keeps it out")
	r := stream(nil, []string{"TestRaceSmallRing", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)})
	r.AttachKernelAt(pkg, "TestRaceSmallRing", "KCSAN", "", report)
	r.Judge(expect.Expectation{}, "test")
	tun, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Present))
	assert.Check(t, is.Len(r.Noted, 1))
}

// TestHangAfterRaceNamesNoSeed: build:7.3.4+kcsan's console ended on a
// (benign) race's report when vhost's TestRaceSmallRing went silent; the
// hang's tail must not pin the hang on the qdisc run that report named.
func TestHangAfterRaceNamesNoSeed(t *testing.T) {
	hang := []string{
		"kernel crashed or hung: no output for 2m0s during github.com/xmitcheck/xmitcheck/suites/vhost: a hang, " +
			"or a silent test (raise --idle-timeout); the console at the end:",
		"read to 0xff1100003f605b10 of 8 bytes by task 175 on cpu 0:",
		" qdisc_maybe_clear_missed+0x51/0xa0",
		" __qdisc_run+0x76e/0x9d0",
		"",
		"Reported by Kernel Concurrency Sanitizer on:",
		"==================================================================",
	}
	s, code := reportSeed(hang)
	assert.Check(t, is.Equal(s, feature.Seed("")), "named %s", code)
	s, _ = reportSeed(append(hang, "BUG: kernel NULL pointer dereference, address: 0000000000000008",
		"RIP: 0010:tun_net_xmit+0x1c/0x8a0"))
	assert.Check(t, is.Equal(s, feature.Seed000Tun), "what came after the race is the crash's")
}

// TestQdiscStateRaceVariants: the same race as build:7.3.4+kcsan printed
// it in vhost's TestRaceSmallRing: with the qdisc run's read reordered to
// the end of qdisc_maybe_clear_missed, at unknown origin, and with
// sch_direct_xmit not inlined. Each is the listed race.
func TestQdiscStateRaceVariants(t *testing.T) {
	for _, r := range [][]string{
		{"BUG: KCSAN: data-race in netif_tx_wake_queue / qdisc_maybe_clear_missed",
			"read-write (marked) to 0xff1100000709fb10 of 8 bytes by task 202 on cpu 1:",
			" netif_tx_wake_queue+0x37/0x70", " __tun_wake_queue+0x1bc/0x1e0",
			"read (reordered) to 0xff1100000709fb10 of 8 bytes by task 190 on cpu 0:",
			" qdisc_maybe_clear_missed+0x51/0xa0", " __qdisc_run+0x76e/0x9d0",
			"  |", "  +-> reordered to: qdisc_maybe_clear_missed+0x92/0xa0"},
		{"BUG: KCSAN: data-race in qdisc_maybe_clear_missed+0x51/0xa0",
			"race at unknown origin, with read to 0xff11000007208710 of 8 bytes by task 193 on cpu 0:",
			" qdisc_maybe_clear_missed+0x51/0xa0", " __qdisc_run+0x76e/0x9d0",
			"value changed: 0x0000000000000001 -> 0x0000000000000000"},
		{"BUG: KCSAN: data-race in netif_tx_wake_queue / sch_direct_xmit",
			"read-write (marked) to 0xff1100000709fb10 of 8 bytes by task 202 on cpu 1:",
			" netif_tx_wake_queue+0x37/0x70", "read to 0xff1100000709fb10 of 8 bytes by task 190 on cpu 0:",
			" sch_direct_xmit+0xa5/0x540"},
	} {
		assert.Check(t, benign(r) != "", "%s", r[0])
	}
}

// TestQueueCountRaceNoted: the race build:no-mb-before-stopped+kcsan
// reported in tun's TestDetachRace, named by the detach it came from
// (__tun_detach) but core code every multiqueue tap has.
func TestQueueCountRaceNoted(t *testing.T) {
	r := []string{"BUG: KCSAN: data-race in netdev_core_pick_tx / netif_set_real_num_tx_queues",
		"write to 0xff1100000325c028 of 4 bytes by task 63 on cpu 0:",
		" netif_set_real_num_tx_queues+0x10b/0x3c0", " __tun_detach+0x6a8/0xa10",
		"read to 0xff1100000325c028 of 4 bytes by task 59 on cpu 1:", " netdev_core_pick_tx+0x64/0x130",
		"value changed: 0x00000002 -> 0x00000001"}
	assert.Check(t, benign(r) != "")
	s, _ := reportSeed(r)
	assert.Check(t, is.Equal(s, feature.Seed000Tun), "without the list it is tun's")
}

// TestTwoReadersNotBenign: the qdisc run racing itself on two CPUs is not
// the listed race of its read against a driver's wake: it stays 003's.
func TestTwoReadersNotBenign(t *testing.T) {
	r := []string{"BUG: KCSAN: data-race in __qdisc_run / sch_direct_xmit",
		"write to 0xff1100000709fb10 of 8 bytes by task 202 on cpu 1:", " sch_direct_xmit+0xa5/0x540",
		"read to 0xff1100000709fb10 of 8 bytes by task 190 on cpu 0:", " __qdisc_run+0xb4/0x9d0"}
	assert.Check(t, is.Equal(benign(r), ""))
}
