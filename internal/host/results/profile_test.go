package results

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

const tun = "github.com/xmitcheck/xmitcheck/suites/tun"

// profiled is a run of TestA (subtests x and y) and TestB, whose tests
// print profile lines as the guest does.
func profiled() *Run {
	r := NewRun("k")
	line := func(p feature.Profile) string { return "    profile.go:1: " + feature.ProfileLine(p) + "\n" }
	for _, e := range []Event{
		{Action: "run", Package: tun, Test: "TestA"},
		{Action: "run", Package: tun, Test: "TestA/x"},
		{Action: "output", Package: tun, Test: "TestA/x", Output: line(feature.Profile{Setup: 500 * time.Millisecond})},
		{Action: "pass", Package: tun, Test: "TestA/x", Elapsed: 1},
		{Action: "run", Package: tun, Test: "TestA/y"},
		{Action: "output", Package: tun, Test: "TestA/y", Output: line(feature.Profile{Waits: time.Second})},
		{Action: "output", Package: tun, Test: "TestA/y", Output: line(feature.Profile{Traffic: 250 * time.Millisecond})},
		{Action: "pass", Package: tun, Test: "TestA/y", Elapsed: 1.5},
		{Action: "output", Package: tun, Test: "TestA", Output: line(feature.Profile{Teardown: 200 * time.Millisecond})},
		{Action: "pass", Package: tun, Test: "TestA", Elapsed: 3},
		{Action: "run", Package: tun, Test: "TestB"},
		{Action: "pass", Package: tun, Test: "TestB", Elapsed: 4},
		{Action: "output", Package: tun, Output: feature.MarginsLine(nil) + "\n"},
		{Action: "pass", Package: tun, Elapsed: 7.5},
	} {
		r.Add(e)
	}
	return r
}

// TestProfiles: a test's profile is its own lines and its subtests'.
func TestProfiles(t *testing.T) {
	ms := time.Millisecond
	got := profiled().Profiles()
	assert.DeepEqual(t, got, []TestProfile{
		{Package: tun, Name: "TestA", Total: 3 * time.Second, Lines: 4,
			Profile: feature.Profile{Setup: 500 * ms, Traffic: 250 * ms, Waits: time.Second, Teardown: 200 * ms}},
		{Package: tun, Name: "TestA/x", Total: time.Second, Lines: 1, Profile: feature.Profile{Setup: 500 * ms}},
		{Package: tun, Name: "TestA/y", Total: 1500 * ms, Lines: 2,
			Profile: feature.Profile{Traffic: 250 * ms, Waits: time.Second}},
		{Package: tun, Name: "TestB", Total: 4 * time.Second},
	})
	assert.Check(t, is.Equal(got[0].Other(), 1050*ms))
	assert.Check(t, is.Equal(got[3].Other(), 4*time.Second), "no line: all other")
}

// TestWriteProfile: top-level tests, the longest first, with their
// heaviest subtests, then the suite's total and shares.
func TestWriteProfile(t *testing.T) {
	var b bytes.Buffer
	WriteProfile(&b, []*Run{profiled()}, 1)
	want := `k: seconds per test in setup, traffic, waits, teardown and other
  test                      total    setup  traffic    waits teardown    other
  suites/tun TestB           4.00     0.00     0.00     0.00     0.00     4.00
  suites/tun TestA           3.00     0.50     0.25     1.00     0.20     1.05
    TestA/y                  1.50     0.00     0.25     1.00     0.00     0.25
  suites/tun (all tests)     7.00     0.50     0.25     1.00     0.20     5.05
  suites/tun (share)         100%       7%       4%      14%       3%      72%
`
	assert.Check(t, is.Equal(b.String(), want))
}

// TestWriteProfileRecorded: the recorded run's tests in the table, each
// top-level test's lines its own and its subtests', the suites' totals.
func TestWriteProfileRecorded(t *testing.T) {
	runs, err := ReadEvents(withProfiles(t))
	assert.NilError(t, err)
	for _, p := range runs[1].Profiles() {
		n := 0
		for _, q := range runs[1].Profiles() {
			if q.Package == p.Package && (q.Name == p.Name || strings.HasPrefix(q.Name, p.Name+"/")) {
				n++
			}
		}
		assert.Check(t, is.Equal(p.Lines, n), "%s: one line per test in its tree", p.Name)
		assert.Check(t, is.Equal(p.Setup, time.Duration(n)*10*time.Millisecond), p.Name)
	}
	var b bytes.Buffer
	WriteProfile(&b, runs[1:], 0)
	out := b.String()
	for _, want := range []string{"suites/devmap TestOrdering", "suites/tun TestClassify", "suites/tun (all tests)",
		"suites/devmap (share)", "all suites (share)"} {
		assert.Check(t, strings.Contains(out, want), "no %q in\n%s", want, out)
	}
	assert.Check(t, !strings.Contains(out, "TestOrdering/"), "no subtests asked for")
	assert.Check(t, !strings.Contains(out, "no test printed a profile line"))
	b.Reset()
	WriteProfile(&b, recorded(t, expect510, expect73), 0)
	assert.Check(t, is.Contains(b.String(), "no test printed a profile line"), "the stream as recorded has none")
	t.Log("\n" + out)
}

// TestProfileRecorded reads a recorded tun run whose tests printed their
// profile lines: each test's parts fit in its time (test2json's elapsed
// is rounded to 10 ms), the table holds what the lines say, and no writer
// shows a line.
func TestProfileRecorded(t *testing.T) {
	f, err := os.Open("testdata/tun-profile.events")
	assert.NilError(t, err)
	defer f.Close()
	runs, err := ReadEvents(f)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(runs, 1))
	r := runs[0]
	for _, p := range r.Profiles() {
		if !strings.Contains(p.Name, "/") {
			assert.Check(t, p.Lines > 0, "%s printed no profile line", p.Name)
		}
		assert.Check(t, p.Sum() <= p.Total+10*time.Millisecond, "%s: %+v over its %v", p.Name, p.Profile, p.Total)
	}
	var b bytes.Buffer
	WriteProfile(&b, runs, 0)
	var rows []string
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); len(f) == 8 && f[0] == "suites/tun" && strings.HasPrefix(f[1], "Test") {
			rows = append(rows, strings.Join(f[1:], " "))
		}
	}
	assert.Check(t, is.DeepEqual(rows, []string{
		"TestRace 13.51 2.68 8.21 0.54 0.99 1.10",
		"TestTailDrop 5.10 3.59 0.32 0.03 0.11 1.06",
		"TestClassify 1.58 0.09 0.41 0.86 0.14 0.08",
		"TestProbe 0.07 0.02 0.00 0.00 0.03 0.02",
	}), b.String())

	r.Finish(nil)
	e, err := expect.Parse(expect73)
	assert.NilError(t, err)
	r.Judge(e, "test")
	assert.Check(t, !r.Failed() && !r.Mismatched(), "%v", r.Counts())
	for name, write := range map[string]func(io.Writer, []*Run) error{
		"json": WriteJSON, "ktap": WriteKTAP, "junit": WriteJUnit,
		"summary": func(w io.Writer, runs []*Run) error { WriteSummary(w, runs); return nil },
	} {
		b.Reset()
		assert.NilError(t, write(&b, runs))
		assert.Check(t, !strings.Contains(b.String(), `"profile"`), "%s shows a profile line", name)
	}
}

// TestProfilesSiblingNamedLikeChild: "TestA/x/z", run after "TestA/x"
// ended, is its sibling (t.Run("x/z") in TestA): its lines are TestA's,
// not TestA/x's.
func TestProfilesSiblingNamedLikeChild(t *testing.T) {
	r := NewRun("k")
	at := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	line := "    profile.go:1: " + feature.ProfileLine(feature.Profile{Setup: time.Second}) + "\n"
	for i, e := range []Event{
		{Action: "run", Package: tun, Test: "TestA"},
		{Action: "run", Package: tun, Test: "TestA/x"},
		{Action: "output", Package: tun, Test: "TestA/x", Output: line},
		{Action: "pass", Package: tun, Test: "TestA/x", Elapsed: 1},
		{Action: "run", Package: tun, Test: "TestA/x/z"},
		{Action: "output", Package: tun, Test: "TestA/x/z", Output: line},
		{Action: "pass", Package: tun, Test: "TestA/x/z", Elapsed: 1},
		{Action: "pass", Package: tun, Test: "TestA", Elapsed: 2},
	} {
		e.Time = at.Add(time.Duration(i) * time.Millisecond)
		r.Add(e)
	}
	lines := map[string]int{}
	for _, p := range r.Profiles() {
		lines[p.Name] = p.Lines
	}
	assert.Check(t, is.DeepEqual(lines, map[string]int{"TestA": 2, "TestA/x": 1, "TestA/x/z": 1}))
}

// TestReadEventsResume: a package that starts again in the events is the
// try after one the emulator ended, which skipped the tests the first try
// finished; the replay keeps those, with their profile lines, and drops
// what the first try left unfinished, as the run did.
func TestReadEventsResume(t *testing.T) {
	var b bytes.Buffer
	line := "    profile.go:1: " + feature.ProfileLine(feature.Profile{Setup: time.Second}) + "\n"
	enc := json.NewEncoder(&b)
	for _, e := range []Event{
		{Action: "start", Package: tun},
		{Action: "run", Package: tun, Test: "TestA"},
		{Action: "output", Package: tun, Test: "TestA", Output: line},
		{Action: "pass", Package: tun, Test: "TestA", Elapsed: 1.5},
		{Action: "run", Package: tun, Test: "TestB"},
		{Action: "output", Package: tun, Test: "TestB", Output: line},
		{Action: "start", Package: tun},
		{Action: "run", Package: tun, Test: "TestB"},
		{Action: "output", Package: tun, Test: "TestB", Output: line},
		{Action: "pass", Package: tun, Test: "TestB", Elapsed: 0.1},
		{Action: "pass", Package: tun, Elapsed: 2},
	} {
		e.Kernel = "k"
		assert.NilError(t, enc.Encode(e))
	}
	runs, err := ReadEvents(&b)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(runs, 1))
	got := runs[0].Profiles()
	assert.Assert(t, is.Len(got, 2))
	for _, p := range got {
		assert.Check(t, is.Equal(p.Lines, 1), "%+v", p)
		assert.Check(t, is.Equal(p.Setup, time.Second), "%+v", p)
	}
	assert.Check(t, is.Equal(got[0].Total, 1500*time.Millisecond), "TestA, from the first try")
	assert.Check(t, is.Equal(got[1].Total, 100*time.Millisecond), "TestB, from the second try alone")
	runs[0].Finish(nil)
	assert.Check(t, is.Equal(runs[0].Counts().Pass, 2), "%v", runs[0].Counts())
}
