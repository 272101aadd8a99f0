package results

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/splat"
)

// noteReports takes out of every test the kernel reports the judge notes
// and does not judge: a sanitizer's report (splat.Sanitizer) that names no
// seed's code (attribute.go), or a race benign.go lists. Each becomes a
// line of r.Noted, and a test that only they failed ends as it ended
// itself (under the judge the guest does not fail a test on a sanitizer's
// report: internal/guest/kmsg). A report of another kind, or one that
// names a seed's code, stays and is judged. It is the judge's first step,
// and taking a report out twice is not possible, so judging again changes
// nothing.
func (r *Run) noteReports() {
	var drop []*Test
	for _, t := range r.Tests {
		if len(t.Kernel) == 0 {
			continue
		}
		var kept []string
		noted := false
		for _, rep := range splitReports(t.Kernel) {
			why := notedWhy(rep)
			if why == "" {
				kept = append(kept, rep...)
				continue
			}
			noted = true
			r.Noted = append(r.Noted, fmt.Sprintf("%s: %s (%s)", testWhere(t), reportTitle(rep), why))
		}
		if !noted {
			continue
		}
		t.Kernel = kept
		switch {
		case len(kept) > 0:
		case t.done:
			t.Status = t.own
		case len(t.Output) == 0:
			drop = append(drop, t) // a test made for the reports alone
		}
	}
	for _, t := range drop {
		r.Tests = slices.DeleteFunc(r.Tests, func(x *Test) bool { return x == t })
		delete(r.byName, key(t.Package, t.Name))
	}
}

// notedWhy says why one report is noted, not judged, or "" when it is
// judged.
func notedWhy(report []string) string {
	if !splat.Sanitizer(reportKind(report[0])) {
		return ""
	}
	if why := benign(report); why != "" {
		return "a known benign race: " + why
	}
	if s, _ := reportSeed(report); s == "" {
		return "in no seed's code: noted, not judged"
	}
	return ""
}

// splitReports cuts a test's Kernel lines into reports, each starting
// with the "kernel KIND…:" head AttachKernel wrote.
func splitReports(lines []string) [][]string {
	var out [][]string
	for _, l := range lines {
		if strings.HasPrefix(l, "kernel ") && strings.HasSuffix(l, ":") || len(out) == 0 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], l)
	}
	return out
}

// reportKind is the kind a report's head names: "KCSAN" of "kernel KCSAN,
// after the binary exited:".
func reportKind(head string) string {
	kind, _ := strings.CutPrefix(head, "kernel ")
	if i := strings.IndexAny(kind, ",;:"); i >= 0 {
		kind = kind[:i]
	}
	return kind
}

// endRule is the rule of "=" a sanitizer's report opens and closes with.
var endRule = regexp.MustCompile(`^={20,}$`)

// reportTitle is a report's first line after its head, without the
// console's time.
func reportTitle(report []string) string {
	for _, l := range report[1:] {
		if body := strings.TrimSpace(printkTime.ReplaceAllString(l, "")); body != "" && !endRule.MatchString(body) {
			return body
		}
	}
	return report[0]
}

// testWhere names a test, or its binary, for a line about it.
func testWhere(t *Test) string {
	switch {
	case t.Package == "kernel":
		return "while no test binary ran"
	case t.Name == "":
		return ShortPackage(t.Package) + " (the test binary)"
	}
	return ShortPackage(t.Package) + "." + t.Name
}

// notes are the runner's notes and, after them, the reports Judge noted
// and the races the tests drove under a sanitizer, for the outputs.
func (r *Run) notes() []string {
	out := slices.Clone(r.Notes)
	for _, n := range r.Noted {
		out = append(out, "kernel report noted: "+n)
	}
	for _, n := range r.Raced {
		out = append(out, "raced under a sanitizer: "+n)
	}
	return out
}
