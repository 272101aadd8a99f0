package results

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// Judge turns what the tests observed into one verdict per seed, under e
// (source says where e comes from). It runs in five steps, each its own
// function: noteReports sets aside the kernel reports it notes and does
// not judge, observe reads every test's records, settle ends each test the
// way e says (an allowed absence or known issue is an XFAIL; a skip for a
// feature the kernel should have is a failure), gather adds the tests up
// per seed, and decide gives each seed its verdict. A seed in named (the
// user's --expect) that no test judged gets an error verdict: nothing
// answered the question asked.
func (r *Run) Judge(e expect.Expectation, source string, named ...feature.Seed) {
	r.Expect, r.ExpectSource = e, source
	r.noteReports()
	obs := r.observe()
	r.Raced = r.raced(obs)
	r.Misses = append(r.settle(obs, e), r.unexpected(obs, e)...)
	evidence := r.gather(obs)
	r.Verdicts = nil
	for _, s := range feature.Seeds {
		t, ok := evidence[s.Seed]
		if !ok && !slices.Contains(named, s.Seed) {
			continue
		}
		v := decide(s.Seed, t, r.Err)
		if r.Unloadable != "" && (v.State == Broken || v.State == Absent) {
			v.State, v.Why = Error, "not tested: "+r.Unloadable+"; "+string(v.State)+" would say: "+v.Why
		}
		if want, ok := e.Seeds[s.Seed]; ok {
			v.Want = Absent
			if want {
				v.Want = Present
			}
		}
		r.Verdicts = append(r.Verdicts, v)
	}
}

// observation is what one test reported besides its status.
type observation struct {
	// seed is the test's own tag (feature.Of) or its nearest ancestor's.
	seed feature.Seed
	// records are what it observed: probes, shown or absent seeds, known
	// issues (its tag excluded).
	records []feature.Record
}

// observe reads every test's records.
func (r *Run) observe() map[*Test]observation {
	tags := map[string]feature.Seed{}
	obs := map[*Test]observation{}
	for _, t := range r.Tests {
		var o observation
		for _, l := range t.Output {
			rec, ok := feature.ParseRecord(l)
			switch {
			case !ok && strings.HasPrefix(l, "panic: "):
				// The Go runtime's own report, at the start of a line (a
				// test's log lines are indented): the harness's code failed.
				o.records = append(o.records, feature.Record{Fault: feature.Harness, Why: "Go " + l})
			case !ok:
			case rec.Seed != "" && !rec.Absent && !rec.Shown:
				tags[key(t.Package, t.Name)] = rec.Seed
			default:
				o.records = append(o.records, rec)
			}
		}
		obs[t] = o
	}
	for t, o := range obs {
		for name := t.Name; name != "" && o.seed == ""; {
			o.seed = tags[key(t.Package, name)]
			i := strings.LastIndex(name, "/")
			if i < 0 {
				break
			}
			name = name[:i]
		}
		obs[t] = o
	}
	return obs
}

// settle ends every test that stopped on an observation the way e says,
// and returns the features e wants that a probe found missing. A test that
// ended on its own record (a skip under the judge) becomes an XFAIL where
// e allows what it saw, and a failure where it does not; an absence of a
// seed e does not mention stays a skip that says so (the verdict reports
// it). A test that failed in any other way, or that the kernel failed,
// stays failed.
func (r *Run) settle(obs map[*Test]observation, e expect.Expectation) []FeatureMiss {
	var misses []FeatureMiss
	for _, t := range r.Tests {
		if t.Status != Skip || len(t.Kernel) > 0 {
			continue
		}
		for _, rec := range obs[t].records {
			switch {
			case rec.Seed != "" && rec.Absent:
				switch want, judged := e.Seeds[rec.Seed]; {
				case !judged:
					t.Judged = fmt.Sprintf("seed %s absent, not judged here (%s): %s", rec.Seed, r.ExpectSource, rec.Why)
				case want:
					t.Status, t.Judged = Fail, fmt.Sprintf("seed %s absent: %s; %s is expected to have it (%s)",
						rec.Seed, rec.Why, r.Kernel, r.ExpectSource)
				default:
					t.Status, t.Judged = XFail, fmt.Sprintf("seed %s absent, as expected: %s", rec.Seed, rec.Why)
				}
			case rec.Issue != "":
				t.Status, t.Judged = XFail, fmt.Sprintf("known kernel issue %s: %s", rec.Issue, rec.Why)
				if !e.Known[rec.Issue] {
					t.Status, t.Judged = Fail, fmt.Sprintf("known kernel issue %s, which the expectation does not allow here: %s",
						rec.Issue, rec.Why)
				}
			case rec.Feature != "" && rec.Absent && e.WantFeature(rec.Feature):
				t.Status, t.Judged = Fail, fmt.Sprintf("kernel lacks %s (%s), but %s is expected to have it (%s)",
					rec.Feature, rec.Why, r.Kernel, r.ExpectSource)
				if !slices.ContainsFunc(misses, func(m FeatureMiss) bool { return m.Feature == rec.Feature }) {
					test := ShortPackage(t.Package) + "." + t.Name
					misses = append(misses, FeatureMiss{Feature: rec.Feature, Probe: rec.Why, Test: test})
				}
			default:
				continue
			}
			break
		}
	}
	return misses
}

// unexpected lists the features e says the kernel lacks ("!F") that a
// probe found there.
func (r *Run) unexpected(obs map[*Test]observation, e expect.Expectation) []FeatureMiss {
	var out []FeatureMiss
	for _, t := range r.Tests {
		for _, rec := range obs[t].records {
			want, judged := e.Features[rec.Feature]
			seen := func(m FeatureMiss) bool { return m.Feature == rec.Feature }
			if !rec.Present || !judged || want || slices.ContainsFunc(out, seen) {
				continue
			}
			test := ShortPackage(t.Package) + "." + t.Name
			out = append(out, FeatureMiss{Feature: rec.Feature, Probe: "present", Test: test, Present: true})
		}
	}
	return out
}

// evidence is what one seed's tests add up to.
type evidence struct {
	passed, skipped int
	// broken, absent and untested hold the first test the kernel failed,
	// the first absence (a probe or the old behaviour) and the first test
	// that failed through something else (the emulator, the environment,
	// an instrument, the harness), each with why.
	broken, absent, untested string
	// shown is the first passed test that saw the seed's behaviour.
	shown string
	// skipWhy is the first skip's reason.
	skipWhy string
	// over are the failed tests of other seeds that run over this one's
	// machinery, reported under it since it is BROKEN (gatherLeaning).
	over []string
}

// gather adds up the leaf tests per seed. Absences count for every seed
// they imply, whichever test saw them: a kernel without IFF_BACKPRESSURE
// has no seed 000.
func (r *Run) gather(obs map[*Test]observation) map[feature.Seed]*evidence {
	by := map[feature.Seed]*evidence{}
	get := func(s feature.Seed) *evidence {
		if by[s] == nil {
			by[s] = &evidence{}
		}
		return by[s]
	}
	var leaning []*Test
	for _, t := range r.Tests {
		explained := false
		for _, rec := range obs[t].records {
			switch {
			case rec.Shown && t.Status == Pass:
				if a := get(rec.Seed); a.shown == "" {
					a.shown = fmt.Sprintf("%s.%s: %s", ShortPackage(t.Package), t.Name, rec.Why)
				}
			case rec.Seed != "" && rec.Absent && t.Judged != "":
				a := get(rec.Seed)
				a.absent = cmp.Or(a.absent, rec.Why)
				explained = true
			case rec.Feature != "" && rec.Absent:
				for _, s := range feature.Features[rec.Feature] {
					a := get(s)
					a.absent = cmp.Or(a.absent, fmt.Sprintf("%s (%s)", rec.Feature, rec.Why))
				}
				explained = true
			}
		}
		seed := obs[t].seed
		// A parent counts only when it failed on its own: a kernel report
		// in its window (a subtest has no window of its own) is its own.
		if seed == "" || r.hasChildren(t) && len(t.Kernel) == 0 && (t.Status != Fail || r.hasFailedChild(t)) {
			continue
		}
		a := get(seed)
		if t.Status == Fail && r.blamedElsewhere(t, seed, obs[t], get) {
			a.untested = cmp.Or(a.untested, ShortPackage(t.Package)+"."+t.Name+": "+r.elsewhere(t, obs[t]))
			continue
		}
		if t.Status == Fail && !explained && t.untested(obs[t]) == "" && len(leansOn(obs[t], seed)) > 0 {
			leaning = append(leaning, t) // decided once every seed's own tests counted
			continue
		}
		switch t.Status {
		case Fail:
			switch why := t.untested(obs[t]); {
			case why != "":
				a.untested = cmp.Or(a.untested, ShortPackage(t.Package)+"."+t.Name+": "+why)
			case explained && len(t.Kernel) == 0:
				a.skipped++
				a.skipWhy = cmp.Or(a.skipWhy, t.Name+": "+t.Reason())
			default:
				a.broken = cmp.Or(a.broken, ShortPackage(t.Package)+"."+t.Name+": "+t.firstFailure())
			}
		case Pass, XFail:
			a.passed++
		case Skip:
			a.skipped++
			a.skipWhy = cmp.Or(a.skipWhy, t.Name+": "+t.Reason())
		}
	}
	r.gatherBinaries(obs, get)
	gatherLeaning(leaning, obs, get)
	return by
}

// gatherBinaries makes every seed of a package whose binary failed outside
// its tests BROKEN, and lists the failures that belong to no seed.
func (r *Run) gatherBinaries(obs map[*Test]observation, get func(feature.Seed) *evidence) {
	r.Orphans = nil
	for _, t := range r.Tests {
		// A binary's bare failure is explained by its failed tests; a
		// kernel report outside its tests is not.
		if t.Status != Fail || obs[t].seed != "" || t.Name == "" && len(t.Kernel) == 0 && r.anyFailed(t.Package) {
			continue
		}
		var seeds []feature.Seed
		if t.Name == "" {
			seeds = r.packageSeeds(t.Package, obs)
		}
		if t.Name == "" && len(seeds) == 0 {
			// It ran no test: its seeds are the suite's.
			seeds = feature.SuiteSeeds(strings.TrimPrefix(ShortPackage(t.Package), "suites/"))
		}
		if len(seeds) == 0 && (len(t.Kernel) == 0 || attribute(t.Kernel).unnamed) {
			r.Orphans = append(r.Orphans, strings.TrimPrefix(ShortPackage(t.Package)+"."+t.Name, ".")+": "+t.firstFailure())
		}
		why := t.untested(obs[t])
		att := attribute(t.Kernel)
		if why == "" && len(t.Kernel) > 0 {
			blame(t, att, get)
			// A report in the binary's window that names other seeds'
			// code only leaves this package's seeds to their tests.
			if !att.unnamed {
				seeds = slices.DeleteFunc(slices.Clone(seeds), func(s feature.Seed) bool { return !att.names(s) })
			}
		}
		for _, s := range seeds {
			a := get(s)
			if why != "" {
				a.untested = cmp.Or(a.untested, ShortPackage(t.Package)+" (the test binary): "+why)
				continue
			}
			a.broken = cmp.Or(a.broken, ShortPackage(t.Package)+" (the test binary): "+t.firstFailure())
		}
	}
}

// untested says why t failed through something that is not the kernel —
// the emulator, a cancelled run, a fault it recorded — or "" when the
// kernel failed it. A kernel report in its window wins over a fault
// record (no fault hides a splat), not over the emulator or a cancel,
// whose own reports end the test.
func (t *Test) untested(o observation) string {
	switch {
	case t.Artefact:
		return "failed by the emulator, not the kernel"
	case t.Cancelled:
		return "the run was cancelled before it ended"
	case len(t.Kernel) > 0:
		return ""
	}
	for _, rec := range o.records {
		if rec.Fault != "" {
			return "not the kernel: " + string(rec.Fault) + ": " + rec.Why
		}
	}
	return ""
}

func (r *Run) hasFailedChild(t *Test) bool {
	for _, c := range r.Tests {
		if c.Package == t.Package && strings.HasPrefix(c.Name, t.Name+"/") && c.Status == Fail {
			return true
		}
	}
	return false
}

// packageSeeds lists the seeds pkg's tests belong to.
func (r *Run) packageSeeds(pkg string, obs map[*Test]observation) []feature.Seed {
	var out []feature.Seed
	for _, t := range r.Tests {
		if s := obs[t].seed; t.Package == pkg && s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// decide gives seed its verdict from its evidence (nil when no test of it
// ran) and the run's error.
func decide(seed feature.Seed, a *evidence, runErr error) Verdict {
	v := Verdict{Seed: seed}
	switch {
	case a == nil && runErr != nil:
		v.State, v.Why = Error, runErr.Error()
	case a == nil:
		v.State, v.Why = Error, "no test of the seed ran: the packages or -run given left them all out"
	case a.broken != "":
		v.State, v.Why = Broken, a.broken
		if len(a.over) > 0 {
			v.Why += fmt.Sprintf(" (and over it %s of other seeds, first %s)", Count(len(a.over), "failed test"), a.over[0])
		}
	case a.absent != "" && a.shown != "":
		v.State, v.Why = Broken, fmt.Sprintf("absent (%s), yet shown by %s", a.absent, a.shown)
	case a.absent != "":
		v.State, v.Why = Absent, a.absent
	case a.untested != "":
		v.State, v.Why = Error, a.untested
	case runErr != nil && a.passed == 0:
		v.State, v.Why = Error, runErr.Error()
	case a.passed > 0 && a.shown == "":
		v.State, v.Why = Error, fmt.Sprintf("%s passed, none of them one that shows the seed's behaviour "+
			"(observe.Shows): run the whole package, or a -run that keeps one", Count(a.passed, "test"))
	case a.passed > 0:
		v.State, v.Why = Present, "passed: "+Count(a.passed, "test")
		if a.skipped > 0 {
			v.Why += fmt.Sprintf(", %d skipped", a.skipped)
		}
		v.Why += "; shown by " + a.shown
	default:
		v.State, v.Why = Error, "every test skipped, none for a reason about the seed; first: "+a.skipWhy
	}
	return v
}
