package results

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

const pkg = "github.com/xmitcheck/xmitcheck/suites/tun"

// sample is a run as test2json reports it: a pass, a skip, a test with
// subtests (one failing) and a test that a kernel splat interrupts.
func sample() *Run {
	r := NewRun("debian:7.3 (7.3.4-1)")
	known := feature.Record{Issue: feature.IssueDevmapSameDevice, Why: "one program per bulk"}.String()
	for _, e := range []Event{
		{Action: "start", Package: pkg},
		{Action: "run", Package: pkg, Test: "TestStock"},
		{Action: "output", Package: pkg, Test: "TestStock", Output: "=== RUN   TestStock\n"},
		{Action: "pass", Package: pkg, Test: "TestStock", Elapsed: 0.5},
		{Action: "run", Package: pkg, Test: "TestFlag"},
		{Action: "output", Package: pkg, Test: "TestFlag",
			Output: "    flag_test.go:12: kernel lacks IFF_BACKPRESSURE (TUNGETFEATURES=0x7173 lacks 0x80)\n"},
		{Action: "output", Package: pkg, Test: "TestFlag", Output: "--- SKIP: TestFlag (0.00s)\n"},
		{Action: "skip", Package: pkg, Test: "TestFlag"},
		{Action: "run", Package: pkg, Test: "TestKnown"},
		{Action: "run", Package: pkg, Test: "TestKnown/SameDevice"},
		{Action: "output", Package: pkg, Test: "TestKnown/SameDevice", Output: "    same_test.go:9: " + known + "\n"},
		{Action: "output", Package: pkg, Test: "TestKnown/SameDevice",
			Output: "    same_test.go:9: known kernel issue devmap-same-device: one program per bulk\n"},
		{Action: "skip", Package: pkg, Test: "TestKnown/SameDevice"},
		{Action: "skip", Package: pkg, Test: "TestKnown"},
		{Action: "run", Package: pkg, Test: "TestWake"},
		{Action: "run", Package: pkg, Test: "TestWake/Half"},
		{Action: "pass", Package: pkg, Test: "TestWake/Half"},
		{Action: "run", Package: pkg, Test: "TestWake/Drain"},
		{Action: "output", Package: pkg, Test: "TestWake/Drain", Output: "    wake_test.go:40: backlog 12 # want 0\n"},
		{Action: "fail", Package: pkg, Test: "TestWake/Drain"},
		{Action: "fail", Package: pkg, Test: "TestWake"},
		{Action: "run", Package: pkg, Test: "TestRace"},
	} {
		r.Add(e)
	}
	r.AttachKernel(pkg, "WARNING", []string{"WARNING: CPU: 0 PID: 1 at net/core/dev.c:1 x"})
	r.Add(Event{Action: "pass", Package: pkg, Test: "TestRace"})
	r.Add(Event{Action: "fail", Package: pkg})
	r.Finish(nil)
	e, _ := expect.Parse("xfail:devmap-same-device")
	r.Judge(e, "test")
	return r
}

func TestCounts(t *testing.T) {
	r := sample()
	assert.Check(t, is.DeepEqual(r.Counts(), Tally{Pass: 2, Fail: 2, Skip: 1, XFail: 1}),
		"pass: TestStock, TestWake/Half; fail: TestWake/Drain, TestRace (splat); skip: TestFlag; xfail: TestKnown/SameDevice")
	assert.Check(t, r.Failed())
}

func TestCrashFailsUnfinished(t *testing.T) {
	r := NewRun("debian:6.1")
	r.Add(Event{Action: "run", Package: pkg, Test: "TestA"})
	r.AttachKernel(pkg, "panic", []string{"Kernel panic - not syncing: boom"})
	r.Finish(errors.New("kernel panicked"))
	assert.Equal(t, r.Counts().Fail, 1)
	assert.Equal(t, r.Tests[0].Status, Fail)

	r = NewRun("debian:6.1")
	r.AttachKernel("", "boot", []string{"no init found"})
	r.Finish(errors.New("boot failed"))
	assert.Equal(t, r.Tests[0].Package+" "+r.Tests[0].Name, "kernel boot")
}

func TestReason(t *testing.T) {
	r := sample()
	assert.Equal(t, r.byName[key(pkg, "TestFlag")].Reason(),
		"kernel lacks IFF_BACKPRESSURE (TUNGETFEATURES=0x7173 lacks 0x80)")
}

func TestKTAP(t *testing.T) {
	ok := NewRun("host (6.18.44)")
	ok.Add(Event{Action: "run", Package: pkg, Test: "TestStock"})
	ok.Add(Event{Action: "pass", Package: pkg, Test: "TestStock"})
	ok.Add(Event{Action: "pass", Package: pkg})
	var b bytes.Buffer
	assert.NilError(t, WriteKTAP(&b, []*Run{sample(), ok}))
	out := b.String()
	checkKTAP(t, out)
	for _, want := range []string{
		"        ok 2 TestFlag # SKIP kernel lacks IFF_BACKPRESSURE (TUNGETFEATURES=0x7173 lacks 0x80)\n",
		"            # wake_test.go:40: backlog 12 # want 0\n",
		"            not ok 2 Drain\n",
		"            ok 1 SameDevice # XFAIL known kernel issue devmap-same-device: one program per bulk\n",
		"        ok 3 TestKnown # XFAIL expected failures in subtests, no pass\n",
		"        # kernel WARNING:\n",
		"    not ok 1 suites/tun\n",
		"not ok 1 debian:7.3 (7.3.4-1)\n",
		"ok 2 host (6.18.44)\n",
	} {
		assert.Check(t, is.Contains(out, want))
	}
}

var (
	versionRE = regexp.MustCompile(`^(KTAP version 1|TAP version 1[34])$`)
	planRE    = regexp.MustCompile(`^1\.\.(\d+)$`)
	resultRE  = regexp.MustCompile(`^(not )?ok (\d+) [^#]*( # (SKIP|TODO|XFAIL).*)?$`)
)

// checkKTAP validates the structure KTAP version 1 requires: every block
// opens with a version line, declares a plan, and its result lines are
// numbered 1..plan; nested blocks are indented by four spaces.
func checkKTAP(t *testing.T, out string) {
	t.Helper()
	type block struct{ plan, seen int }
	var stack []*block
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		depth := (len(line) - len(trimmed)) / 4
		where := fmt.Sprintf("line %d %q", i+1, line)
		switch {
		case versionRE.MatchString(trimmed):
			assert.Equal(t, depth, len(stack), where)
			stack = append(stack, &block{plan: -1})
		case planRE.MatchString(trimmed):
			assert.Equal(t, depth, len(stack)-1, where)
			n, _ := strconv.Atoi(planRE.FindStringSubmatch(trimmed)[1])
			stack[depth].plan = n
		case strings.HasPrefix(trimmed, "#"):
		case resultRE.MatchString(trimmed):
			for len(stack) > depth+1 {
				b := stack[len(stack)-1]
				assert.Equal(t, b.seen, b.plan, "plan of the block closed at %s", where)
				stack = stack[:len(stack)-1]
			}
			n, _ := strconv.Atoi(resultRE.FindStringSubmatch(trimmed)[2])
			stack[depth].seen++
			assert.Equal(t, n, stack[depth].seen, where)
		default:
			t.Fatalf("not a KTAP line: %s", where)
		}
	}
	assert.Assert(t, is.Len(stack, 1))
	assert.Equal(t, stack[0].seen, stack[0].plan)
}

func TestSummaryClosingLine(t *testing.T) {
	var b bytes.Buffer
	WriteSummary(&b, []*Run{sample()})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	assert.Equal(t, lines[len(lines)-1], "2 passed, 2 failed, 1 skipped, 1 xfail")
	assert.Check(t, is.Contains(b.String(), "--- FAIL: debian:7.3 (7.3.4-1) suites/tun.TestRace\n"))
	assert.Check(t, !strings.Contains(b.String(), "the test binary itself"),
		"a binary with failing tests is not reported again")

	r := NewRun("host")
	r.Add(Event{Action: "run", Package: pkg, Test: "TestA"})
	r.Add(Event{Action: "pass", Package: pkg, Test: "TestA"})
	r.Add(Event{Action: "output", Package: pkg, Output: "testmain: FAIL: tests leaked 1 file descriptors\n"})
	r.Add(Event{Action: "fail", Package: pkg})
	b.Reset()
	WriteSummary(&b, []*Run{r})
	assert.Check(t, is.Contains(b.String(), "--- FAIL: host suites/tun (the test binary itself)\n    testmain: FAIL"))
	assert.Check(t, is.Contains(b.String(), "1 passed, 1 failed, 0 skipped, 0 xfail\n"))
}

// TestSummaryTiming: a kernel line gives its boot only where one booted.
func TestSummaryTiming(t *testing.T) {
	host, vm := NewRun("host"), NewRun("debian:7.3")
	host.AddBoot(0, 24*time.Second, "none")
	vm.AddBoot(3500*time.Millisecond, 4*time.Minute, "tcg")
	var b bytes.Buffer
	WriteSummary(&b, []*Run{host, vm})
	assert.Check(t, is.Contains(b.String(), "host: 0 passed, 0 failed, 0 skipped, 0 xfail (no VM, total 24s)\n"))
	assert.Check(t, is.Contains(b.String(),
		"debian:7.3: 0 passed, 0 failed, 0 skipped, 0 xfail (tcg, boot-to-first-test 3.5s, total 4m0s)\n"))
}

// TestBenchmarksPassWithTheirPackage: go test prints no "--- PASS" for a
// benchmark; one the package's pass leaves open passed, and its result
// line is kept for benchstat.
func TestBenchmarksPassWithTheirPackage(t *testing.T) {
	r := NewRun("host")
	for _, e := range []Event{
		{Action: "run", Package: pkg, Test: "BenchmarkTap"},
		{Action: "output", Package: pkg, Test: "BenchmarkTap", Output: "BenchmarkTap-2 \t 1000\t 12 ns/op\t 34 rx-pps\n"},
		{Action: "pass", Package: pkg},
	} {
		r.Add(e)
	}
	r.Finish(nil)
	assert.Check(t, is.DeepEqual(r.Counts(), Tally{Pass: 1}))
	assert.Check(t, is.DeepEqual(r.BenchmarkLines(), []string{"BenchmarkTap-2 \t 1000\t 12 ns/op\t 34 rx-pps"}))
}

// TestSummaryNamesSkips: the summary names every skipped and xfail test by
// its reason, not only their number.
func TestSummaryNamesSkips(t *testing.T) {
	var b bytes.Buffer
	WriteSummary(&b, []*Run{sample()})
	assert.Check(t, is.Contains(b.String(),
		"  xfail 1: known kernel issue devmap-same-device: suites/tun.TestKnown/SameDevice\n"))
	assert.Check(t, is.Contains(b.String(),
		"  skip 1: kernel lacks IFF_BACKPRESSURE (TUNGETFEATURES=0x7173 lacks 0x80): suites/tun.TestFlag\n"))
}

// TestSplitLinesJoin: test2json cuts an output line longer than 1 KiB into
// events without its newline; a binary's margins line (a site per test
// that waits) is that long on 7.3, and a soak lost tun's and vhost's.
func TestSplitLinesJoin(t *testing.T) {
	var sites []string
	for i := range 20 {
		sites = append(sites, fmt.Sprintf(`{"site":"tun/env_test.go:%d","limit":10000000000,"worst":7098329,"n":7}`, i))
	}
	line := `xmitcheck:{"margins":[` + strings.Join(sites, ",") + `]}`
	r := NewRun("k")
	r.Add(Event{Action: "output", Package: pkg, Output: "PASS\n"})
	for rest := line + "\n"; rest != ""; {
		n := min(len(rest), 1024)
		r.Add(Event{Action: "output", Package: pkg, Output: rest[:n]})
		rest = rest[n:]
	}
	r.Add(Event{Action: "output", Package: pkg, Output: "ok\n"})
	assert.DeepEqual(t, r.Tests[0].Output, []string{"PASS", line, "ok"})
	m := r.Margins()
	assert.Assert(t, len(line) > 1024)
	assert.Check(t, is.Len(m, 20))
}

func TestAddBoot(t *testing.T) {
	r := NewRun("k")
	r.AddBoot(0, 20*time.Second, "tcg") // died of the int3 artefact while booting
	r.AddBoot(9*time.Second, 90*time.Second, "tcg")
	r.AddBoot(7*time.Second, 30*time.Second, "tcg")
	assert.Check(t, is.Equal(r.BootToFirstTest, 9*time.Second), "the first boot that started a test")
	assert.Check(t, is.Equal(r.Total, 140*time.Second), "every boot's time")
}
