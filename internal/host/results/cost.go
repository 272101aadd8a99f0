package results

import (
	"fmt"
	"io"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/host/cost"
)

// CostPackage is the package name cost rows carry in JSON, KTAP and JUnit:
// their own column, apart from the verdicts.
const CostPackage = "cost"

// costStatus is how a cost row ends as a test: within its claim it passes,
// REGRESSED fails, noisy or unmeasured is a skip that says why.
func costStatus(c cost.Row) (Status, string) {
	switch c.Judgment {
	case cost.Within:
		return Pass, ""
	case cost.Regressed:
		return Fail, ""
	}
	return Skip, fmt.Sprintf("%s: %s", c.Judgment, c.Figures())
}

// CostRegressed reports whether a cost row of the run regressed.
func (r *Run) CostRegressed() bool {
	for _, c := range r.Costs {
		if c.Judgment == cost.Regressed {
			return true
		}
	}
	return false
}

// writeCostsKTAP writes the run's cost rows as a subtest: a diagnostic line
// with the figures, then a result per row.
func writeCostsKTAP(w io.Writer, ind string, num int, r *Run) {
	sub := ind + "    "
	fmt.Fprintf(w, "%sKTAP version 1\n%s# Subtest: %s\n%s1..%d\n", sub, sub, CostPackage, sub, len(r.Costs))
	st := Pass
	for i, c := range r.Costs {
		diag(w, sub, []string{c.Line(), "method: " + c.Method, "judged on " + c.Judged + ": " + c.Why})
		cs, why := costStatus(c)
		if cs == Fail {
			st = Fail
		}
		result(w, sub, i+1, c.ID(), cs, why)
	}
	result(w, ind, num, CostPackage, st, "")
}

// costs writes the package "cost": one test per row.
func (j *jsonRun) costs() {
	r := j.run
	if len(r.Costs) == 0 {
		return
	}
	pkg, at := j.name(CostPackage), r.Ended
	j.emit(Event{Time: at, Action: "start", Package: pkg})
	failed := false
	for _, c := range r.Costs {
		name := c.ID()
		out := func(line string) {
			j.emit(Event{Time: at, Action: "output", Package: pkg, Test: name, Output: line + "\n"})
		}
		st, why := costStatus(c)
		failed = failed || st == Fail
		j.emit(Event{Time: at, Action: "run", Package: pkg, Test: name})
		out("=== RUN   " + name)
		out("    " + c.Line())
		out("    method: " + c.Method)
		if why != "" {
			out("    " + why)
		}
		out("--- " + strings.ToUpper(string(st)) + ": " + name + " (0.00s)")
		j.emit(Event{Time: at, Action: string(st), Package: pkg, Test: name})
	}
	line, action := "ok  ", "pass"
	if failed {
		line, action = "FAIL", "fail"
	}
	j.emit(Event{Time: at, Action: "output", Package: pkg, Output: fmt.Sprintf("%s\t%s\t0.000s\n", line, pkg)})
	j.emit(Event{Time: at, Action: action, Package: pkg})
}

// junitCosts is the testsuite "KERNEL/cost": a case per row, failed where
// it REGRESSED, skipped where it is noisy or unmeasured; every row's
// judgment and figures are a property named after it.
func junitCosts(r *Run) junitSuite {
	class := label(r) + "/" + CostPackage
	s := junitSuite{Name: class, Package: class, Time: "0", Timestamp: timestamp(r.Ended)}
	var out []string
	for _, c := range r.Costs {
		jc := junitCase{Class: class, Name: c.ID(), Time: "0"}
		switch st, why := costStatus(c); st {
		case Fail:
			s.Failures++
			jc.Failure = &junitMessage{Type: "cost", Message: c.Line()}
		case Skip:
			s.Skipped++
			jc.Skipped = &junitMessage{Type: junitSkip, Message: why}
		}
		s.Tests++
		s.Cases = append(s.Cases, jc)
		s.Properties = append(s.Properties, junitProperty{"cost." + c.ID(), string(c.Judgment) + ": " + c.Figures()})
		out = append(out, c.Line(), "  method: "+c.Method)
	}
	s.SystemOut = strings.Join(out, "\n")
	return s
}
