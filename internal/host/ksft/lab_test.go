package ksft

import (
	"bytes"
	"os"
	slices "slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// recorded replays the judge's recorded runs of suites/devmap and
// suites/tun (results/testdata: 5.10, where 000 and 004 are absent, and
// 7.3, where they show), judged by specs.
func recorded(t *testing.T, specs ...string) []*results.Run {
	t.Helper()
	f, err := os.Open("../results/testdata/tun-devmap.events")
	assert.NilError(t, err)
	defer f.Close()
	runs, err := results.ReadEvents(f)
	assert.NilError(t, err)
	for i, r := range runs {
		r.Finish(nil)
		e, err := expect.Parse(specs[i])
		assert.NilError(t, err)
		r.Judge(e, "kernels/expectations")
	}
	return runs
}

// TestWriteLabResults: one case line per leaf test, named as KCIDB's path
// below its root, its LAVA result, seconds, own status and why; one
// verdict line per seed of the suite, with its result, state, wanted
// state and why.
func TestWriteLabResults(t *testing.T) {
	runs := recorded(t, "!000 !002 !004", "000 !002 004 xfail:devmap-same-device")
	var b bytes.Buffer
	assert.NilError(t, WriteLabResults(&b, "tun", "debian:5.10", "5.10.0-32-amd64", runs[0]))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	assert.Check(t, is.Equal(lines[0], "kernel debian:5.10 5.10.0-32-amd64 kernels/expectations"))
	assert.Check(t, is.Contains(b.String(), "\ncase tun.TestClassify.flag_off.qdisc_pfifo skip "))
	assert.Check(t, is.Contains(b.String(), " xfail seed 002 absent, as expected: flag off, pfifo:"))
	assert.Check(t, is.Contains(b.String(),
		"\nverdict 000-tun pass absent absent IFF_BACKPRESSURE (TUNGETFEATURES=0x7133 lacks 0x80)\n"))
	for _, l := range lines {
		f := strings.Fields(l)
		switch f[0] {
		case "case":
			assert.Check(t, len(f) >= 6, l)
			assert.Check(t, strings.HasPrefix(f[1], "tun.") || strings.HasPrefix(f[1], "devmap."), l)
			assert.Check(t, !strings.ContainsAny(f[1], "/="), "a case name keeps KCIDB's path characters: %s", l)
		case "verdict":
			assert.Check(t, slices.Contains(feature.SuiteSeeds("tun"), feature.Seed(f[1])), "only tun's own seeds: %s", l)
		case "kernel":
		default:
			t.Errorf("unexpected line %q", l)
		}
	}

	b.Reset()
	assert.NilError(t, WriteLabResults(&b, "devmap", "", "", runs[1]))
	assert.Check(t, is.Contains(b.String(), "kernel - - kernels/expectations\n"), "no name, no release: a dash each")
	assert.Check(t, is.Contains(b.String(), "\nverdict 004 pass present present passed:"))
	assert.Check(t, !strings.Contains(b.String(), "verdict 000-tun"), "000-tun is tun's to report")
}

// TestVerdictResult: a verdict passes where it is what the expectation
// wants, fails where it differs (BROKEN and error always), and is a skip
// where nothing judges an absent seed.
func TestVerdictResult(t *testing.T) {
	for _, c := range []struct {
		state, want results.State
		result      string
	}{
		{results.Present, results.Present, "pass"},
		{results.Absent, results.Absent, "pass"},
		{results.Absent, results.Present, "fail"},
		{results.Present, results.Absent, "fail"},
		{results.Present, "", "pass"},
		{results.Absent, "", "skip"},
		{results.Broken, "", "fail"},
		{results.Error, results.Present, "fail"},
	} {
		v := results.Verdict{Seed: feature.Seed004, State: c.state, Want: c.want}
		assert.Check(t, is.Equal(VerdictResult(v), c.result), "%s want %q", c.state, c.want)
	}
	for st, want := range map[results.Status]string{
		results.Pass: "pass", results.Fail: "fail", results.Skip: "skip", results.XFail: "skip",
	} {
		assert.Check(t, is.Equal(LabResult(st), want), st)
	}
	assert.Check(t, is.Equal(CaseName("suites/tun", "TestClassify/flag=off/qdisc=pfifo"),
		"tun.TestClassify.flag_off.qdisc_pfifo"))
}
