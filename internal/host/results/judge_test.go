package results

import (
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// stream builds a run from (test, status, logged lines) as a judged guest
// reports it.
func stream(runErr error, tests ...[]string) *Run {
	r := NewRun("k")
	for _, tc := range tests {
		name, status := tc[0], tc[1]
		r.Add(Event{Action: "run", Package: pkg, Test: name})
		for _, l := range tc[2:] {
			r.Add(Event{Action: "output", Package: pkg, Test: name, Output: "    a_test.go:7: " + l + "\n"})
		}
		r.Add(Event{Action: status, Package: pkg, Test: name})
	}
	r.Finish(runErr)
	return r
}

// judged is stream judged against expect.
func judged(t *testing.T, spec string, runErr error, tests ...[]string) *Run {
	t.Helper()
	r := stream(runErr, tests...)
	e, err := expect.Parse(spec)
	assert.NilError(t, err)
	r.Judge(e, "test")
	return r
}

func tag(s feature.Seed) string { return feature.Record{Seed: s}.String() }

// shows is the record of a test that saw seed s's behaviour.
func shows(s feature.Seed) string {
	return feature.Record{Seed: s, Shown: true, Why: "queue stopped"}.String()
}

var (
	enqueue  = feature.Record{Seed: feature.Seed004, Absent: true, Why: "devmap program ran at enqueue time"}.String()
	sameDev  = feature.Record{Issue: feature.IssueDevmapSameDevice, Why: "one program per bulk"}.String()
	fqMissed = feature.Record{Feature: feature.FqCodel, Absent: true, Why: "RTM_NEWQDISC fq_codel: ENOENT"}.String()
	probe    = feature.Record{
		Feature: feature.IFFBackpressure, Absent: true, Why: "TUNGETFEATURES=0x7173 lacks 0x80",
	}.String()
)

func TestObserve(t *testing.T) {
	r := stream(nil,
		[]string{"TestA", "pass", tag(feature.Seed000Tun)},
		[]string{"TestA/sub", "skip", probe},
		[]string{"TestB", "pass"},
	)
	obs := r.observe()
	sub := r.byName[key(pkg, "TestA/sub")]
	assert.Check(t, is.Equal(obs[sub].seed, feature.Seed000Tun), "a subtest belongs to its parent's seed")
	assert.Check(t, is.Len(obs[sub].records, 1))
	assert.Check(t, is.Len(obs[r.byName[key(pkg, "TestA")]].records, 0), "a tag is not an observation")
	assert.Check(t, is.Equal(obs[r.byName[key(pkg, "TestB")]].seed, feature.Seed("")))
}

func TestSettle(t *testing.T) {
	for _, tc := range []struct {
		name, expect string
		test         []string
		want         Status
		judged       string
		misses       int
	}{
		{"absent, as expected", "!004", []string{"T", "skip", enqueue}, XFail,
			"seed 004 absent, as expected: devmap program ran at enqueue time", 0},
		{"absent where expected present", "004", []string{"T", "skip", enqueue}, Fail,
			"seed 004 absent: devmap program ran at enqueue time; k is expected to have it (test)", 0},
		{"absent, not judged", "", []string{"T", "skip", enqueue}, Skip,
			"seed 004 absent, not judged here (test): devmap program ran at enqueue time", 0},
		{"known issue allowed", "xfail:devmap-same-device", []string{"T", "skip", sameDev}, XFail,
			"known kernel issue devmap-same-device: one program per bulk", 0},
		{"known issue not allowed", "004", []string{"T", "skip", sameDev}, Fail,
			"known kernel issue devmap-same-device, which the expectation does not allow here: one program per bulk", 0},
		{"probe, feature expected", "000-tun", []string{"T", "skip", probe}, Fail,
			"kernel lacks IFF_BACKPRESSURE (TUNGETFEATURES=0x7173 lacks 0x80), but k is expected to have it (test)", 1},
		{"probe, feature not expected", "!000", []string{"T", "skip", probe}, Skip, "", 0},
		{"failed on its own after a record", "!004", []string{"T", "fail", enqueue, "cleanup: link left"}, Fail, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := judged(t, tc.expect, nil, tc.test)
			got := r.Tests[0]
			assert.Check(t, is.Equal(got.Status, tc.want))
			assert.Check(t, is.Equal(got.Judged, tc.judged))
			assert.Check(t, is.Len(r.Misses, tc.misses))
		})
	}
}

func TestGather(t *testing.T) {
	r := stream(nil,
		[]string{"TestA", "fail", tag(feature.Seed000Tun), "a_test.go:9: summary wrong"},
		[]string{"TestA/sub", "pass", shows(feature.Seed000Tun)},
		[]string{"TestB", "pass", tag(feature.Seed004)},
		[]string{"TestB/x", "skip", enqueue},
	)
	e, _ := expect.Parse("!004")
	r.Judge(e, "test")
	evidence := r.gather(r.observe())
	assert.Check(t, is.Equal(evidence[feature.Seed000Tun].broken,
		"suites/tun.TestA: a_test.go:7: a_test.go:9: summary wrong"), "a parent that failed on its own counts")
	assert.Check(t, is.Equal(evidence[feature.Seed000Tun].shown, "suites/tun.TestA/sub: queue stopped"))
	assert.Check(t, is.Equal(evidence[feature.Seed004].absent, "devmap program ran at enqueue time"))
	assert.Check(t, is.Equal(evidence[feature.Seed004].broken, ""),
		"a parent whose child ended on its absence counts nothing")
}

func TestGatherBinaryFailure(t *testing.T) {
	r := stream(nil, []string{"TestA", "pass", tag(feature.Seed003), shows(feature.Seed003)})
	r.AttachKernel(pkg, "WARNING", []string{"WARNING: CPU: 1 PID: 9 at net/sched/sch_generic.c:1 x"})
	r.AttachKernel("", "BUG", []string{"BUG: soft lockup"})
	r.Judge(expect.Expectation{}, "test")
	v, _ := r.verdict(feature.Seed003)
	assert.Check(t, is.Equal(v.State, Broken), "a splat while the binary ran outside its tests fails its seeds")
	assert.Check(t, is.Contains(v.Why, "suites/tun (the test binary): kernel WARNING:"))
	assert.Check(t, is.DeepEqual(r.Orphans, []string{"kernel.BUG: kernel BUG: BUG: soft lockup"}))
}

// TestBinaryCannotStart: a test binary the guest could not start (missing,
// unreadable) ran no test, and leaves its suite's seeds error, with why.
func TestBinaryCannotStart(t *testing.T) {
	why := "cannot start the test binary /bins/tun.test: fork/exec /bins/tun.test: no such file or directory"
	r := NewRun("k")
	r.Add(Event{Action: "output", Package: pkg, Output: "xmitcheck guest: " + why + "\n"})
	r.Add(Event{Action: "output", Package: pkg, Output: feature.Record{Fault: feature.Harness, Why: why}.String() + "\n"})
	r.Add(Event{Action: "fail", Package: pkg, Output: "exit status 127"})
	r.Finish(nil)
	r.Judge(expect.Expectation{}, "test")
	for _, s := range []feature.Seed{feature.Seed000Tun, feature.Seed002} {
		v, ok := r.verdict(s)
		assert.Assert(t, ok, "%s has no verdict", s)
		assert.Check(t, is.Equal(v.State, Error))
		assert.Check(t, is.Equal(v.Why, "suites/tun (the test binary): not the kernel: harness: "+why))
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   *evidence
		err  error
		want State
		why  string
	}{
		{"no test ran", nil, nil, Error, "no test of the seed ran: the packages or -run given left them all out"},
		{"no test ran, run failed", nil, errors.New("qemu failed"), Error, "qemu failed"},
		{"broken wins", &evidence{broken: "T: lost 3", absent: "x", passed: 2, shown: "S"}, nil, Broken, "T: lost 3"},
		{"absent and shown", &evidence{absent: "no flag", shown: "S: stopped", passed: 1}, nil, Broken,
			"absent (no flag), yet shown by S: stopped"},
		{"absent", &evidence{absent: "no flag", skipped: 3}, nil, Absent, "no flag"},
		{"emulator", &evidence{untested: "T: failed by the emulator, not the kernel", passed: 1, shown: "S"}, nil, Error,
			"T: failed by the emulator, not the kernel"},
		{"passed without proof", &evidence{passed: 2}, nil, Error,
			"2 tests passed, none of them one that shows the seed's behaviour (observe.Shows): " +
				"run the whole package, or a -run that keeps one"},
		{"present", &evidence{passed: 2, skipped: 1, shown: "S: stopped"}, nil, Present,
			"passed: 2 tests, 1 skipped; shown by S: stopped"},
		{"the run died first", &evidence{skipped: 1, skipWhy: "T: no fq_codel"}, errors.New("panic"), Error, "panic"},
		{"skipped for another reason", &evidence{skipped: 1, skipWhy: "T: needs 4 CPUs"}, nil, Error,
			"every test skipped, none for a reason about the seed; first: T: needs 4 CPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decide(feature.Seed003, tc.ev, tc.err)
			assert.Check(t, is.Equal(v.State, tc.want))
			assert.Check(t, is.Equal(v.Why, tc.why))
		})
	}
}

func TestJudge(t *testing.T) {
	r := judged(t, "004,!000,fq_codel", nil,
		[]string{"TestOrdering", "pass", tag(feature.Seed004), shows(feature.Seed004)},
		[]string{"TestSame", "skip", tag(feature.Seed004), sameDev},
		[]string{"TestTap", "skip", tag(feature.Seed004), probe},
		[]string{"TestQdisc", "skip", tag(feature.Seed004), fqMissed},
	)
	v, _ := r.verdict(feature.Seed004)
	assert.Check(t, is.Equal(v.State, Broken), "a known issue the expectation does not allow is a failure")
	assert.Check(t, is.Contains(v.Why, "TestSame"))
	tun, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.DeepEqual(tun, Verdict{
		Seed: feature.Seed000Tun, State: Absent, Why: "IFF_BACKPRESSURE (TUNGETFEATURES=0x7173 lacks 0x80)", Want: Absent,
	}))
	assert.Check(t, is.DeepEqual(r.Misses, []FeatureMiss{
		{Feature: feature.FqCodel, Probe: "RTM_NEWQDISC fq_codel: ENOENT", Test: "suites/tun.TestQdisc"},
	}))
	assert.Check(t, r.Mismatched())
}

func TestJudgeNamedSeeds(t *testing.T) {
	r := stream(nil, []string{"TestOrdering", "pass", tag(feature.Seed004), shows(feature.Seed004)})
	e, _ := expect.Parse("003,004")
	r.Judge(e, "--expect 003,004", feature.Seed003, feature.Seed004)
	v, ok := r.verdict(feature.Seed003)
	assert.Assert(t, ok, "a named seed gets a verdict even when no test of it ran")
	assert.Check(t, is.Equal(v.State, Error))
	assert.Check(t, v.Mismatch())
	r.Judge(e, "kernels/expectations")
	_, ok = r.verdict(feature.Seed003)
	assert.Check(t, !ok, "a seed only the expectation file names is judged where its tests ran")
}

// TestBrokenNamesTheFailure: the verdict's reason is the failed assertion,
// not the progress a test logged before it, and a kernel report first.
func TestBrokenNamesTheFailure(t *testing.T) {
	r := judged(t, "003", nil, []string{"TestFastPath", "fail", tag(feature.Seed003),
		"fastpath_test.go:69: 10s of at most 40s: 147 of 300 calls decided",
		"fastpath_test.go:88: assertion failed: error is not nil: frames stranded"})
	v, _ := r.verdict(feature.Seed003)
	assert.Check(t, is.Equal(v.Why,
		"suites/tun.TestFastPath: a_test.go:7: fastpath_test.go:88: assertion failed: error is not nil: frames stranded"))

	r = NewRun("k")
	r.Add(Event{Action: "run", Package: pkg, Test: "TestFastPath"})
	logs := func(line string) {
		r.Add(Event{Action: "output", Package: pkg, Test: "TestFastPath", Output: line + "\n"})
	}
	logs("    a_test.go:7: " + tag(feature.Seed003))
	logs("    fastpath_test.go:69: 10s of at most 40s")
	r.AttachKernel(pkg, "WARNING", []string{"WARNING: CPU: 1 PID: 9 at net/core/dev.c:1 x"})
	r.Add(Event{Action: "pass", Package: pkg, Test: "TestFastPath"})
	r.Finish(nil)
	r.Judge(expect.Expectation{}, "test")
	v, _ = r.verdict(feature.Seed003)
	assert.Check(t, is.Contains(v.Why, "kernel WARNING: WARNING: CPU: 1"))
}

// TestFaults holds the judge to a failure's cause: a test that failed on
// something not the kernel's (a Fault record) makes its seed error, never
// BROKEN and never present; a real failure beside it still makes it
// BROKEN; a kernel report under the test is the kernel's whatever the test
// said, and no probe's skip hides one.
func TestFaults(t *testing.T) {
	env := feature.Record{Fault: feature.Environment, Why: "probe failed: open /dev/net/tun: no such file"}.String()
	lost := feature.Record{Fault: feature.Instrument, Why: "xdp_devmap_xmit counter: 3 recursion misses"}.String()
	splat := func(r *Run, name string) {
		r.byName[key(pkg, name)].Kernel = []string{"kernel WARNING:", "WARNING: CPU: 0 PID: 1 at net/core/dev.c:1 x"}
		r.byName[key(pkg, name)].Status = Fail
	}
	for _, tc := range []struct {
		name  string
		tests [][]string
		kern  string // a test that gets a splat
		want  State
		why   string
	}{
		{"environment", [][]string{
			{"TestA", "fail", tag(feature.Seed004), env},
			{"TestB", "pass", tag(feature.Seed004), shows(feature.Seed004)}},
			"", Error, "suites/tun.TestA: not the kernel: environment: probe failed: open /dev/net/tun: no such file"},
		{"instrument", [][]string{{"TestA", "fail", tag(feature.Seed004), shows(feature.Seed004), lost}},
			"", Error, "suites/tun.TestA: not the kernel: instrument: xdp_devmap_xmit counter: 3 recursion misses"},
		{"a real failure beside", [][]string{
			{"TestA", "fail", tag(feature.Seed004), lost},
			{"TestB", "fail", tag(feature.Seed004), "b_test.go:3: lost 3"}},
			"", Broken, "suites/tun.TestB: a_test.go:7: b_test.go:3: lost 3"},
		{"a splat wins over a fault", [][]string{{"TestA", "fail", tag(feature.Seed004), env}},
			"TestA", Broken, "suites/tun.TestA: kernel WARNING: WARNING: CPU: 0 PID: 1 at net/core/dev.c:1 x"},
		{"no probe skip hides a splat", [][]string{
			{"TestA", "pass", tag(feature.Seed004), shows(feature.Seed004)},
			{"TestA/tap", "skip", probe}},
			"TestA/tap", Broken, "suites/tun.TestA/tap: kernel WARNING: WARNING: CPU: 0 PID: 1 at net/core/dev.c:1 x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := stream(nil, tc.tests...)
			if tc.kern != "" {
				splat(r, tc.kern)
			}
			e, err := expect.Parse("004")
			assert.NilError(t, err)
			r.Judge(e, "test")
			v, _ := r.verdict(feature.Seed004)
			assert.Check(t, is.Equal(v.State, tc.want))
			assert.Check(t, is.Equal(v.Why, tc.why))
		})
	}
}

// TestSplatWhereItHappened holds the judge to where the kernel log put a
// report: in a test's window it fails that test (and only its seed); outside
// the tests, or after the binary exited, it fails the binary, so every seed
// of the package is BROKEN, even when another test of it failed too.
func TestSplatWhereItHappened(t *testing.T) {
	warn := []string{"WARNING: CPU: 0 PID: 1 at net/core/dev.c:1 x"}
	tests := [][]string{
		{"TestA", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)},
		{"TestB", "pass", tag(feature.Seed002), shows(feature.Seed002)},
		{"TestC", "fail", tag(feature.Seed002), "c_test.go:3: lost 3"},
	}
	r := stream(nil, tests...)
	r.AttachKernelAt(pkg, "TestA", "WARNING", "", warn)
	r.Judge(expect.Expectation{}, "test")
	v, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(v.State, Broken))
	assert.Check(t, is.Equal(v.Why, "suites/tun.TestA: kernel WARNING: "+warn[0]))
	v, _ = r.verdict(feature.Seed002)
	assert.Check(t, is.Equal(v.Why, "suites/tun.TestC: a_test.go:7: c_test.go:3: lost 3"), "TestA's report is not 002's")

	for _, where := range []string{"outside its tests", "after the binary exited"} {
		r := stream(nil, tests...)
		r.AttachKernelAt(pkg, "", "WARNING", where, warn)
		r.Judge(expect.Expectation{}, "test")
		v, _ := r.verdict(feature.Seed000Tun)
		assert.Check(t, is.Equal(v.State, Broken), where)
		assert.Check(t, is.Equal(v.Why, "suites/tun (the test binary): kernel WARNING, "+where+": "+warn[0]))
		assert.Check(t, is.Len(r.Orphans, 0), "a report in a binary's window is never an orphan")
	}
}

// TestNotFeature holds the judge to "!F": a kernel expected to lack a
// feature fails where a probe found it, and only where the expectation
// says so explicitly.
func TestNotFeature(t *testing.T) {
	has := feature.Record{Feature: feature.BPFBroadcast, Present: true}.String()
	tests := []string{"TestBroadcast", "pass", tag(feature.Seed004), has, shows(feature.Seed004)}
	r := judged(t, "004,!BPF_F_BROADCAST", nil, tests)
	assert.Assert(t, is.Len(r.Misses, 1))
	assert.Check(t, is.Equal(r.Misses[0].Line(),
		"kernel has BPF_F_BROADCAST, expected to lack it; seen by suites/tun.TestBroadcast"))
	assert.Check(t, r.Mismatched())

	r = judged(t, "004", nil, tests)
	assert.Check(t, is.Len(r.Misses, 0), "an expectation that does not name the feature does not judge it")
	assert.Check(t, !r.Mismatched())
}

// TestHarnessPanic holds the judge to a Go panic in the suite's own code
// (the runtime prints it at the start of a line): not the kernel's, error.
func TestHarnessPanic(t *testing.T) {
	r := NewRun("k")
	r.Add(Event{Action: "run", Package: pkg, Test: "TestA"})
	r.Add(Event{Action: "output", Package: pkg, Test: "TestA",
		Output: "    a_test.go:7: " + tag(feature.Seed004) + "\n"})
	r.Add(Event{Action: "output", Package: pkg, Test: "TestA",
		Output: "    a_test.go:9: panic: a log line, not a panic\n"})
	r.Add(Event{Action: "output", Package: pkg, Test: "TestA",
		Output: "panic: runtime error: index out of range [3] with length 3 [recovered]\n"})
	r.Add(Event{Action: "fail", Package: pkg, Test: "TestA"})
	r.Finish(nil)
	r.Judge(expect.Expectation{}, "test")
	v, _ := r.verdict(feature.Seed004)
	assert.Check(t, is.Equal(v.State, Error))
	assert.Check(t, is.Equal(v.Why,
		"suites/tun.TestA: not the kernel: harness: Go panic: runtime error: "+
			"index out of range [3] with length 3 [recovered]"))
}

// TestCancelled holds the judge to a run the user stopped: the test it
// stopped is not tested, not BROKEN.
func TestCancelled(t *testing.T) {
	r := NewRun("k")
	r.Add(Event{Action: "run", Package: pkg, Test: "TestA"})
	r.Add(Event{Action: "output", Package: pkg, Test: "TestA",
		Output: "    a_test.go:7: " + tag(feature.Seed004) + "\n"})
	r.Cancel()
	r.Finish(errors.New("run cancelled during suites/tun: context canceled"))
	r.Judge(expect.Expectation{}, "test")
	v, _ := r.verdict(feature.Seed004)
	assert.Check(t, is.Equal(v.State, Error))
	assert.Check(t, is.Equal(v.Why, "suites/tun.TestA: the run was cancelled before it ended"))
}

// TestSplatOnAParent holds the judge to a report in a parent's window
// whose subtest failed on its own (a probe's skip the expectation turns
// into a failure): the report is the kernel's, the seed BROKEN by it.
func TestSplatOnAParent(t *testing.T) {
	r := stream(nil,
		[]string{"TestA", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)},
		[]string{"TestA/tap", "skip", probe},
	)
	r.AttachKernelAt(pkg, "TestA", "WARNING", "", []string{"WARNING: CPU: 0 PID: 1 at x.c:1 y"})
	e, err := expect.Parse("000-tun")
	assert.NilError(t, err)
	r.Judge(e, "test")
	v, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(v.State, Broken))
	assert.Check(t, is.Equal(v.Why, "suites/tun.TestA: kernel WARNING: WARNING: CPU: 0 PID: 1 at x.c:1 y"))
}

// TestUnloadable holds the judge to a kernel whose modules could not be
// loaded: what would be absent or BROKEN is error; present stays present.
func TestUnloadable(t *testing.T) {
	r := stream(nil,
		[]string{"TestA", "fail", tag(feature.Seed000Tun), "a_test.go:9: open /dev/net/tun: no such file"},
		[]string{"TestB", "pass", tag(feature.Seed004), shows(feature.Seed004)},
	)
	r.Unloadable = "vmlinuz builds tun as modules and no --modules directory came with it"
	r.Judge(expect.Expectation{}, "test")
	v, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(v.State, Error))
	assert.Check(t, is.Contains(v.Why, "not tested: vmlinuz builds tun as modules"))
	v, _ = r.verdict(feature.Seed004)
	assert.Check(t, is.Equal(v.State, Present))
}

// TestCancelledBetweenTests holds the judge to a run stopped while the
// binary ran outside its tests: the binary is not tested, not BROKEN.
func TestCancelledBetweenTests(t *testing.T) {
	r := NewRun("k")
	r.Add(Event{Action: "run", Package: pkg, Test: "TestA"})
	r.Add(Event{Action: "output", Package: pkg, Test: "TestA",
		Output: "    a_test.go:7: " + tag(feature.Seed004) + "\n"})
	r.Add(Event{Action: "output", Package: pkg, Test: "TestA",
		Output: "    a_test.go:8: " + shows(feature.Seed004) + "\n"})
	r.Add(Event{Action: "pass", Package: pkg, Test: "TestA"})
	r.Add(Event{Action: "output", Package: pkg, Output: "between tests\n"})
	r.Cancel()
	r.Finish(errors.New("run cancelled during suites/tun: context canceled"))
	r.Judge(expect.Expectation{}, "test")
	v, _ := r.verdict(feature.Seed004)
	assert.Check(t, is.Equal(v.State, Error))
	assert.Check(t, is.Equal(v.Why, "suites/tun (the test binary): the run was cancelled before it ended"))
}
