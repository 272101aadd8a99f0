package results

import (
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
// found missing, or (Present) one it was expected to lack that a probe
// found there.
type FeatureMiss struct {
	Feature feature.Feature
	Probe   string
	Test    string
	// Present: the probe found the feature where the kernel is expected
	// to lack it ("!F").
	Present bool `json:",omitempty"`
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

// firstFailure is the line that says why the test failed: the kernel's
// report when one is attached, else the first failed assertion
// (gotest.tools says "assertion failed"), else the last line the test
// logged from a test file (a Fatal's message ends the test), skipping its
// records and its progress lines before.
func (t *Test) firstFailure() string {
	if len(t.Kernel) > 1 {
		return strings.Join(t.Kernel[:2], " ")
	}
	last := ""
	for _, l := range t.Output {
		l = strings.TrimSpace(l)
		_, record := feature.ParseRecord(l)
		fromTest := strings.Contains(l, ".go:") && !strings.Contains(l, "failed to parse source file")
		if record || !fromTest || isProtocolLine(l) {
			continue
		}
		if strings.Contains(l, "assertion failed") {
			return l
		}
		last = l
	}
	if last != "" {
		return last
	}
	if out := withoutProtocol(t.Output); len(out) > 0 {
		return strings.TrimSpace(out[len(out)-1])
	}
	return "failed"
}

// transcript is everything the test printed but the protocol lines, then
// the kernel's reports attached to it, one line each.
func (t *Test) transcript() string {
	return strings.Join(append(withoutProtocol(t.Output), t.Kernel...), "\n")
}

// judgedTranscript is the transcript of a test the judge ended otherwise
// than it ended itself: its own end ("--- SKIP") left out, the judge's
// word last, as the summary shows it.
func (t *Test) judgedTranscript() string {
	var lines []string
	for _, l := range withoutProtocol(t.Output) {
		if !strings.HasPrefix(strings.TrimSpace(l), "--- ") {
			lines = append(lines, l)
		}
	}
	lines = append(append(lines, t.Kernel...), "xmitcheck: "+t.Judged)
	return strings.Join(lines, "\n")
}

// VerdictPackage is the package name verdicts carry in JSON, KTAP and
// JUnit.
const VerdictPackage = "verdicts"

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
			name := ShortPackage(t.Package) + "." + t.Name
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

// Line is the verdict as one line: "003: absent (want present): why".
func (v Verdict) Line() string {
	want := ""
	if v.Want != "" {
		want = " (want " + string(v.Want) + ")"
	}
	return string(v.Seed) + ": " + string(v.State) + want + ": " + v.Why
}

// Line is the miss as one line.
func (m FeatureMiss) Line() string {
	if m.Present {
		return "kernel has " + string(m.Feature) + ", expected to lack it; seen by " + m.Test
	}
	return "kernel lacks " + string(m.Feature) + " (" + m.Probe + "), expected to have it; seen by " + m.Test
}
