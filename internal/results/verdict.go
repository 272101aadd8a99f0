package results

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// State is a seed's verdict on one kernel.
type State string

const (
	// Present: no probe found the seed missing and every test of the seed
	// that ran passed (or failed only as a known issue allows).
	Present State = "present"
	// Absent: a probe found a feature the seed needs missing, or a test saw
	// the behaviour from before the seed, exactly.
	Absent State = "absent"
	// Broken: a test of the seed failed for any other reason, the kernel
	// included (a splat, a crash or a hang under the test).
	Broken State = "BROKEN"
	// Error: the seed could not be tested (boot, infrastructure, every
	// test skipped for a reason that says nothing about the seed).
	Error State = "error"
)

// Verdict is one seed's cell of the verdict table for one kernel.
type Verdict struct {
	Seed  feature.Seed
	State State
	// Why names the probe and what it read (absent), the failing test and
	// its first failing line (BROKEN), what stopped the tests (error), or
	// how many tests passed (present).
	Why string
	// Want is the expected state, Present or Absent; empty when the
	// expectation does not judge the seed.
	Want State
}

// Mismatch reports whether the cell differs from its expectation. A BROKEN
// or error cell is always a mismatch: no expectation allows them.
func (v Verdict) Mismatch() bool {
	if v.State == Broken || v.State == Error {
		return true
	}
	return v.Want != "" && v.State != v.Want
}

// FeatureMiss is a feature the kernel was expected to have that a probe
// found missing.
type FeatureMiss struct {
	Feature feature.Feature
	Probe   string
	Test    string
}

// Judge gives each seed that the run's tests touched one verdict, and
// compares the verdicts and the probes with e. It keeps the result in the
// run (Verdicts, Misses) for the writers.
//
// A test belongs to the seed its nearest ancestor (or itself) tagged with
// feature.Of. A failed test counts against its seed (BROKEN) unless it
// failed because a probe or the test itself found the seed or a feature
// missing (its records say so): that is an absence, judged against e.
func (r *Run) Judge(e feature.Expectation, source string) {
	r.Expect, r.ExpectSource = e, source
	r.Verdicts, r.Misses = nil, nil
	tags := map[string]feature.Seed{} // package + test name -> its own tag
	recs := map[*Test][]feature.Record{}
	for _, t := range r.Tests {
		for _, l := range t.Output {
			rec, ok := feature.ParseRecord(l)
			if !ok {
				continue
			}
			recs[t] = append(recs[t], rec)
			if rec.Seed != "" && !rec.Absent && !rec.Shown {
				tags[key(t.Package, t.Name)] = rec.Seed
			}
		}
	}
	seedOf := func(t *Test) feature.Seed {
		for name := t.Name; name != ""; {
			if s, ok := tags[key(t.Package, name)]; ok {
				return s
			}
			i := strings.LastIndex(name, "/")
			if i < 0 {
				break
			}
			name = name[:i]
		}
		return ""
	}

	type tally struct {
		ran, passed, skipped int
		broken, absent       string
		skipWhy, untested    string
		// shown is the first passed test that saw the behaviour.
		shown string
	}
	by := map[feature.Seed]*tally{}
	get := func(s feature.Seed) *tally {
		if by[s] == nil {
			by[s] = &tally{}
		}
		return by[s]
	}
	for _, t := range r.Tests {
		seed := seedOf(t)
		// Absences count for every seed they imply, whichever test saw
		// them: a kernel without IFF_BACKPRESSURE has no seed 000.
		explained := false
		for _, rec := range recs[t] {
			switch {
			case rec.Shown && t.Status == Pass:
				if a := get(rec.Seed); a.shown == "" {
					a.shown = fmt.Sprintf("%s.%s: %s", shortPackage(t.Package), t.Name, rec.Why)
				}
			case rec.Seed != "" && rec.Absent:
				if a := get(rec.Seed); a.absent == "" {
					a.absent = rec.Why
				}
				explained = true
			case rec.Feature != "" && rec.Absent:
				for _, s := range feature.Features[rec.Feature] {
					if a := get(s); a.absent == "" {
						a.absent = fmt.Sprintf("%s (%s)", rec.Feature, rec.Why)
					}
				}
				if e.WantFeature(rec.Feature) && !slices.ContainsFunc(r.Misses, func(m FeatureMiss) bool { return m.Feature == rec.Feature }) {
					r.Misses = append(r.Misses, FeatureMiss{Feature: rec.Feature, Probe: rec.Why, Test: shortPackage(t.Package) + "." + t.Name})
				}
				explained = true
			}
		}
		if seed == "" || t.Name == "" || r.hasChildren(t) && t.Status != Fail {
			continue
		}
		a := get(seed)
		switch t.Status {
		case Fail:
			if r.hasFailedChild(t) {
				continue
			}
			if t.Artefact {
				a.untested = cmp.Or(a.untested, shortPackage(t.Package)+"."+t.Name+": failed by the emulator, not the kernel")
				continue
			}
			if explained { // a probe failed it: like a skip, judged by Misses
				a.skipped++
				if a.skipWhy == "" {
					a.skipWhy = t.Name + ": " + t.firstFailure()
				}
				continue
			}
			if a.broken == "" {
				a.broken = shortPackage(t.Package) + "." + t.Name + ": " + t.firstFailure()
				for _, rec := range recs[t] {
					if rec.Issue != "" {
						a.broken = fmt.Sprintf("%s.%s: known issue %s where the expectation does not allow it: %s", shortPackage(t.Package), t.Name, rec.Issue, rec.Why)
					}
				}
			}
		case Pass, XFail:
			a.ran++
			a.passed++
		case Skip:
			a.ran++
			a.skipped++
			if a.skipWhy == "" {
				a.skipWhy = t.Name + ": " + t.Reason()
			}
		}
	}

	for _, s := range feature.Seeds {
		a := by[s.Seed]
		if a == nil {
			continue
		}
		v := Verdict{Seed: s.Seed}
		if want, ok := e.Seeds[s.Seed]; ok {
			v.Want = Absent
			if want {
				v.Want = Present
			}
		}
		switch {
		case a.broken != "":
			v.State, v.Why = Broken, a.broken
		case a.absent != "":
			v.State, v.Why = Absent, a.absent
		case a.untested != "":
			v.State, v.Why = Error, a.untested
		case r.Err != nil && a.passed == 0:
			v.State, v.Why = Error, r.Err.Error()
		case a.passed > 0 && a.shown == "":
			v.State, v.Why = Error, fmt.Sprintf("%d tests passed, none of them one that shows the seed's behaviour (feature.Shows): they pass without it too; run the whole package, or a -run that keeps such a test", a.passed)
		case a.passed > 0:
			v.State, v.Why = Present, fmt.Sprintf("passed: %d tests", a.passed)
			if a.skipped > 0 {
				v.Why += fmt.Sprintf(", %d skipped", a.skipped)
			}
			v.Why += "; shown by " + a.shown
		case a.skipped > 0:
			v.State, v.Why = Error, "every test skipped, none for a reason about the seed; first: "+a.skipWhy
		default:
			continue
		}
		r.Verdicts = append(r.Verdicts, v)
	}
}

// Mismatched reports whether anything in the verdicts fails the run: a cell
// that differs from its expectation, or an expected feature missing.
func (r *Run) Mismatched() bool {
	for _, v := range r.Verdicts {
		if v.Mismatch() {
			return true
		}
	}
	return len(r.Misses) > 0
}

func (r *Run) hasFailedChild(t *Test) bool {
	for _, c := range r.Tests {
		if c.Package == t.Package && strings.HasPrefix(c.Name, t.Name+"/") && c.Status == Fail {
			return true
		}
	}
	return false
}

// firstFailure is the first line a failed test logged from a test file
// (its first failing assertion), or the kernel's report.
func (t *Test) firstFailure() string {
	for _, l := range t.Output {
		l = strings.TrimSpace(l)
		if _, ok := feature.ParseRecord(l); ok || !strings.Contains(l, ".go:") || strings.Contains(l, "failed to parse source file") {
			continue
		}
		return l
	}
	if len(t.Kernel) > 1 {
		return strings.Join(t.Kernel[:2], " ")
	}
	if len(t.Output) > 0 {
		return strings.TrimSpace(t.Output[len(t.Output)-1])
	}
	return "failed"
}

// VerdictPackage is the package name verdicts carry in JSON, KTAP and
// JUnit.
const VerdictPackage = "verdicts"

// VerdictEvents returns the run's verdicts as go test -json events, one
// "pass" or "fail" per seed, so tools that read test events show them.
func (r *Run) VerdictEvents() []Event {
	var out []Event
	for _, v := range r.Verdicts {
		action := "pass"
		if v.Mismatch() {
			action = "fail"
		}
		out = append(out, Event{Action: action, Package: VerdictPackage, Test: string(v.Seed), Kernel: r.Kernel,
			Verdict: v.State, Want: v.Want, Why: v.Why})
	}
	return out
}

// VerdictChange is one seed's verdict on two kernels.
type VerdictChange struct {
	Seed          feature.Seed
	Base, Patched State
}

// DiffVerdicts pairs the seeds' verdicts of two runs, in table order; a
// seed one run did not judge shows "—" there.
func DiffVerdicts(base, patched *Run) []VerdictChange {
	var out []VerdictChange
	for _, s := range feature.Seeds {
		b, okb := base.verdict(s.Seed)
		p, okp := patched.verdict(s.Seed)
		if !okb && !okp {
			continue
		}
		c := VerdictChange{Seed: s.Seed, Base: "—", Patched: "—"}
		if okb {
			c.Base = b.State
		}
		if okp {
			c.Patched = p.State
		}
		out = append(out, c)
	}
	return out
}

// TestChange is a leaf test whose status differs between two runs.
type TestChange struct {
	Test          string
	Base, Patched Status
}

// DiffTests lists the leaf tests whose status differs between two runs
// (a test only one run has shows "—" in the other), in the order of the
// patched run, then the base run's leftovers.
func DiffTests(base, patched *Run) []TestChange {
	status := func(r *Run) (map[string]Status, []string) {
		m := map[string]Status{}
		var order []string
		for _, t := range r.Tests {
			if t.Name == "" || r.hasChildren(t) {
				continue
			}
			name := shortPackage(t.Package) + "." + t.Name
			m[name] = t.Status
			order = append(order, name)
		}
		return m, order
	}
	bm, border := status(base)
	pm, porder := status(patched)
	var out []TestChange
	seen := map[string]bool{}
	for _, name := range append(porder, border...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		b, p := bm[name], pm[name]
		if b == "" {
			b = "—"
		}
		if p == "" {
			p = "—"
		}
		if b != p {
			out = append(out, TestChange{name, b, p})
		}
	}
	return out
}
