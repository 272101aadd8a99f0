package results

import (
	"errors"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// judged builds a run from (test, status, logged lines) and judges it.
func judged(t *testing.T, expect string, runErr error, tests ...[]string) *Run {
	t.Helper()
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
	e, err := feature.ParseExpectation(expect)
	assert.NilError(t, err)
	r.Judge(e, "test")
	return r
}

func tag(s feature.Seed) string { return feature.Record{Seed: s}.String() }

// shows is the record of a test that saw seed s's behaviour.
func shows(s feature.Seed) string {
	return feature.Record{Seed: s, Shown: true, Why: "queue stopped"}.String()
}

func TestJudge(t *testing.T) {
	probe := feature.Record{Feature: feature.IFFBackpressure, Absent: true, Why: "TUNGETFEATURES=0x7173 lacks 0x80"}.String()
	for _, tc := range []struct {
		name     string
		expect   string
		err      error
		tests    [][]string
		want     Verdict
		mismatch bool
	}{
		{"present", "000-tun", nil, [][]string{{"TestA", "pass", tag(feature.Seed000Tun)}, {"TestA/sub", "pass", shows(feature.Seed000Tun)}},
			Verdict{Seed: feature.Seed000Tun, State: Present, Why: "passed: 1 tests; shown by suites/tun.TestA/sub: queue stopped", Want: Present}, false},
		{"passed, but nothing showed the behaviour", "000-tun", nil, [][]string{{"TestA", "pass", tag(feature.Seed000Tun)}, {"TestA/sub", "pass"}},
			Verdict{Seed: feature.Seed000Tun, State: Error, Why: "1 tests passed, none of them one that shows the seed's behaviour (feature.Shows): they pass without it too; run the whole package, or a -run that keeps such a test", Want: Present}, true},
		{"shown by a test that then failed", "000-tun", nil, [][]string{{"TestA", "fail", tag(feature.Seed000Tun), shows(feature.Seed000Tun), "a_test.go:9: lost 3 frames"}, {"TestB", "pass", tag(feature.Seed000Tun)}},
			Verdict{Seed: feature.Seed000Tun, State: Broken, Why: "suites/tun.TestA: a_test.go:7: a_test.go:9: lost 3 frames", Want: Present}, true},
		{"a probe says absent, as expected", "!000-tun", nil, [][]string{{"TestA", "pass", tag(feature.Seed000Tun)}, {"TestB", "skip", tag(feature.Seed000Tun), probe, "kernel lacks IFF_BACKPRESSURE"}},
			Verdict{Seed: feature.Seed000Tun, State: Absent, Why: "IFF_BACKPRESSURE (TUNGETFEATURES=0x7173 lacks 0x80)", Want: Absent}, false},
		{"a probe says absent where expected present", "000-tun", nil, [][]string{{"TestB", "fail", tag(feature.Seed000Tun), probe, "kernel lacks IFF_BACKPRESSURE, but …"}},
			Verdict{Seed: feature.Seed000Tun, State: Absent, Why: "IFF_BACKPRESSURE (TUNGETFEATURES=0x7173 lacks 0x80)", Want: Present}, true},
		{"the old behaviour seen", "", nil, [][]string{{"TestOrdering", "fail", tag(feature.Seed004), feature.Record{Seed: feature.Seed004, Absent: true, Why: "devmap program ran at enqueue time"}.String(), "seed 004 absent: devmap program ran at enqueue time"}},
			Verdict{Seed: feature.Seed004, State: Absent, Why: "devmap program ran at enqueue time"}, false},
		{"broken", "003", nil, [][]string{{"TestX", "pass", tag(feature.Seed003)}, {"TestFastPath", "fail", tag(feature.Seed003), "fastpath_test.go:88: 12 schedules with defer_list non-empty"}},
			Verdict{Seed: feature.Seed003, State: Broken, Why: "suites/tun.TestFastPath: a_test.go:7: fastpath_test.go:88: 12 schedules with defer_list non-empty", Want: Present}, true},
		{"the run died before the seed's tests passed", "003", errors.New("qemu failed"), [][]string{{"TestX", "skip", tag(feature.Seed003), "no fq_codel"}},
			Verdict{Seed: feature.Seed003, State: Error, Why: "qemu failed", Want: Present}, true},
		{"every test skipped for another reason", "", nil, [][]string{{"TestX", "skip", tag(feature.Seed003), "needs 4 CPUs"}},
			Verdict{Seed: feature.Seed003, State: Error, Why: "every test skipped, none for a reason about the seed; first: TestX: needs 4 CPUs"}, true},
		{"a known issue allowed", "004", nil, [][]string{{"TestOrdering", "pass", tag(feature.Seed004), shows(feature.Seed004)}, {"TestSame", "skip", tag(feature.Seed004), "XFAIL known kernel issue devmap-same-device: …"}},
			Verdict{Seed: feature.Seed004, State: Present, Why: "passed: 2 tests; shown by suites/tun.TestOrdering: queue stopped", Want: Present}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := judged(t, tc.expect, tc.err, tc.tests...)
			v, ok := r.verdict(tc.want.Seed)
			assert.Assert(t, ok, "no verdict for %s: %+v", tc.want.Seed, r.Verdicts)
			assert.Check(t, is.DeepEqual(v, tc.want))
			assert.Check(t, is.Equal(v.Mismatch(), tc.mismatch))
		})
	}
}

func TestJudgeFeatureMiss(t *testing.T) {
	miss := feature.Record{Feature: feature.FqCodel, Absent: true, Why: "RTM_NEWQDISC fq_codel: ENOENT"}.String()
	r := judged(t, "fq_codel,000-tun", nil, []string{"TestA", "fail", tag(feature.Seed000Tun)}, []string{"TestA/pfifo", "pass", shows(feature.Seed000Tun)}, []string{"TestA/fq_codel", "fail", miss, "kernel lacks fq_codel, but …"})
	assert.Check(t, is.DeepEqual(r.Misses, []FeatureMiss{{Feature: feature.FqCodel, Probe: "RTM_NEWQDISC fq_codel: ENOENT", Test: "suites/tun.TestA/fq_codel"}}))
	v, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(v.State, Present), "a missing fq_codel says nothing about seed 000")
	assert.Check(t, r.Mismatched())
}
