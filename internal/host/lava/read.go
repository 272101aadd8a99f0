package lava

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/ksft"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// The test definition's script (lava/xmitcheck-kselftest.sh) reports each
// test case with lava-test-case (its name ksft.CaseName), the kselftest
// runner's result per suite as the case SUITE, each seed's verdict as the
// case SEED of the set "verdicts", and the words LAVA's results cannot
// carry as events (lava-test-event): the kernel and its expectation, each
// verdict's state, wanted state and why.
const (
	VerdictSet   = "verdicts"
	EventKernel  = "xmitcheck-kernel"
	EventVerdict = "xmitcheck-verdict"
	EventMiss    = "xmitcheck-miss"
	// EventCase carries a test's own status (an XFAIL, which LAVA has as
	// a skip) and why, for each test that did not pass.
	EventCase = "xmitcheck-case"
	// EventError says why a suite's run could not finish (its case
	// SUITE.run fails).
	EventError = "xmitcheck-error"
)

// entry is one line of a LAVA job's log.
type entry struct {
	Lvl string `yaml:"lvl"`
	Msg any    `yaml:"msg"`
}

// caseResult is one result LAVA recorded: a test case's, or (definition
// "lava") one of LAVA's own.
type caseResult struct {
	definition, name, result, set string
	// measurement is the test's seconds; duration a definition's.
	measurement, duration string
}

var testDefinition = regexp.MustCompile(`^[0-9]+_` + regexp.QuoteMeta(TestDefName) + `$`)

// Read reads a LAVA job's log — lava-run's standard output, or the log a
// LAVA server keeps for the job ("- " before each line) — and returns the
// kernel's results as xmitcheck's reports take them: each test case and
// its LAVA result, each seed's verdict (its words from the events, checked
// against LAVA's result of its case), and why the run could not finish
// when the job, or a suite under the runner, failed without results.
func Read(r io.Reader) (results.Snapshot, error) {
	var cases []caseResult
	var events, errs []string
	jobFailed := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "- ")
		if line == "" {
			continue
		}
		var e entry
		if err := yaml.Unmarshal([]byte(line), &e); err != nil || e.Lvl == "" {
			return results.Snapshot{}, fmt.Errorf("line %d is not a LAVA log entry ({dt, lvl, msg}): give the job's log "+
				"(lava-run's output, or the job's log file), not its results: %.80q", n, line)
		}
		switch msg := e.Msg.(type) {
		case map[string]any:
			if e.Lvl != "results" {
				continue
			}
			c := caseResult{definition: str(msg["definition"]), name: str(msg["case"]), result: str(msg["result"]),
				set: str(msg["set"]), measurement: str(msg["measurement"]), duration: str(msg["duration"])}
			if c.definition == "lava" && c.name == "job" && c.result != "pass" {
				jobFailed = cmp.Or(str(msg["error_msg"]), "result "+c.result)
			}
			cases = append(cases, c)
		case string:
			switch {
			case e.Lvl == "event" && strings.HasPrefix(msg, "xmitcheck-"):
				events = append(events, msg)
			case e.Lvl == "error":
				errs = append(errs, msg)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return results.Snapshot{}, err
	}
	return snapshot(cases, events, jobFailed, errs)
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// snapshot puts what the log said together.
func snapshot(cases []caseResult, events []string, jobFailed string, errs []string) (results.Snapshot, error) {
	s := results.Snapshot{Accel: "lava"}
	ev := parseEvents(events)
	verdictResult := map[string]string{}
	runner := map[string]string{} // suite: the kselftest runner's result
	for _, c := range cases {
		if c.definition == "lava" && testDefinition.MatchString(c.name) {
			secs, _ := strconv.ParseFloat(c.duration, 64)
			s.Total += time.Duration(secs * float64(time.Second))
		}
		if !testDefinition.MatchString(c.definition) {
			continue
		}
		suite, name, isTest := strings.Cut(c.name, ".")
		switch {
		case c.set == VerdictSet && strings.HasPrefix(c.name, "feature."):
			// A missing feature: its event says which and why.
		case c.set == VerdictSet:
			verdictResult[c.name] = c.result
		case !isTest:
			runner[c.name] = c.result
		case name == "run" && ev.errors[suite] != "":
			// The suite's run could not finish: its event says why.
		default:
			secs, _ := strconv.ParseFloat(c.measurement, 64)
			t := results.SnapshotTest{Package: "suites/" + suite, Name: strings.ReplaceAll(name, ".", "/"),
				Status: status(c.result), Elapsed: time.Duration(secs * float64(time.Second))}
			if x, ok := ev.cases[c.name]; ok {
				t.Status, t.Why = x.Status, x.Why
			}
			s.Tests = append(s.Tests, t)
		}
	}
	s.Kernel, s.Name, s.Release, s.ExpectSource = ev.kernel, ev.name, ev.release, ev.source
	s.Misses = ev.misses
	for _, v := range ev.verdicts {
		if got, want := verdictResult[string(v.Seed)], ksft.VerdictResult(v); got != want {
			return s, fmt.Errorf("seed %s: LAVA's result is %q, but its verdict (%s) makes it %q: "+
				"the log is not one the test definition wrote", v.Seed, got, v.Line(), want)
		}
		s.Verdicts = append(s.Verdicts, v)
	}
	for seed := range verdictResult {
		if !slices.ContainsFunc(s.Verdicts, func(v results.Verdict) bool { return string(v.Seed) == seed }) {
			return s, fmt.Errorf("seed %s has a LAVA result but no %s event: the log is not one the test definition wrote",
				seed, EventVerdict)
		}
	}
	slices.SortStableFunc(s.Verdicts, func(a, b results.Verdict) int {
		return cmp.Compare(seedIndex(a.Seed), seedIndex(b.Seed))
	})
	s.Err = unfinished(s, runner, ev.errors, jobFailed, errs)
	if s.Kernel == "" {
		if s.Err == "" {
			return s, fmt.Errorf("no %s event: the log holds no run of the xmitcheck test definition", EventKernel)
		}
		s.Kernel = "unknown kernel"
	}
	return s, nil
}

// events is what the test definition's events said.
type events struct {
	kernel, name, release, source string
	verdicts                      []results.Verdict
	misses                        []results.FeatureMiss
	// cases are the tests that did not pass, by case name: their own
	// status and why.
	cases map[string]results.SnapshotTest
	// errors say why a suite's run could not finish, by suite.
	errors map[string]string
}

func parseEvents(lines []string) events {
	ev := events{cases: map[string]results.SnapshotTest{}, errors: map[string]string{}}
	for _, line := range lines {
		f := strings.SplitN(strings.TrimSpace(line), " ", 5)
		rest := func(i int) string { return strings.TrimSpace(strings.Join(f[min(i, len(f)):], " ")) }
		switch {
		case f[0] == EventKernel && len(f) >= 3 && ev.kernel == "":
			ev.name, ev.release = dash(f[1]), dash(f[2])
			ev.kernel = cmp.Or(ev.name, "host") + " (" + ev.release + ")"
			ev.source = rest(3)
		case f[0] == EventVerdict && len(f) >= 4:
			ev.verdicts = append(ev.verdicts, results.Verdict{Seed: feature.Seed(f[1]), State: results.State(f[2]),
				Want: results.State(dash(f[3])), Why: rest(4)})
		case f[0] == EventMiss && len(f) >= 2:
			// A feature this xmitcheck does not know stays in the LAVA
			// log: the xmitcheck that ran the job reads it.
			if ft, ok := feature.FeatureNamed(f[1]); ok {
				ev.misses = append(ev.misses, results.FeatureMiss{Feature: ft, Probe: rest(2), Test: "the LAVA log"})
			}
		case f[0] == EventCase && len(f) >= 3:
			ev.cases[f[1]] = results.SnapshotTest{Status: results.Status(f[2]), Why: dash(rest(3))}
		case f[0] == EventError && len(f) >= 2:
			ev.errors[f[1]] = rest(2)
		}
	}
	return ev
}

// unfinished says why the run could not finish, "" when it did: a suite's
// run that said so, one the runner failed without results of its own (a
// test the runner killed at its timeout), the LAVA job's failure.
func unfinished(s results.Snapshot, runner, errors map[string]string, jobFailed string, errs []string) string {
	var why []string
	for _, suite := range slices.Sorted(maps.Keys(errors)) {
		why = append(why, "suites/"+suite+": "+errors[suite])
	}
	for _, suite := range slices.Sorted(maps.Keys(runner)) {
		ran := slices.ContainsFunc(s.Tests, func(t results.SnapshotTest) bool { return t.Package == "suites/"+suite })
		if runner[suite] == "fail" && !ran && errors[suite] == "" {
			why = append(why, "suites/"+suite+": the kselftest runner failed it and it wrote no results "+
				"(killed at the settings' timeout?): the LAVA log has its output")
		}
	}
	if jobFailed != "" {
		j := "the LAVA job failed: " + jobFailed
		if len(errs) > 0 {
			j += " (" + errs[len(errs)-1] + ")"
		}
		why = append(why, j)
	}
	return strings.Join(why, "; ")
}

func status(result string) results.Status {
	switch result {
	case "pass":
		return results.Pass
	case "skip":
		return results.Skip
	}
	return results.Fail
}

func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func seedIndex(s feature.Seed) int {
	for i, x := range feature.Seeds {
		if x.Seed == s {
			return i
		}
	}
	return len(feature.Seeds)
}
