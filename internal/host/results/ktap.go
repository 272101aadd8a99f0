package results

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriteKTAP writes runs as KTAP version 1 (Documentation/dev-tools/ktap.rst):
// one top-level test per kernel, nested per package, test and subtest, with
// the output of failed tests as diagnostic lines before their result.
func WriteKTAP(w io.Writer, runs []*Run) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "KTAP version 1")
	fmt.Fprintf(bw, "1..%d\n", len(runs))
	for i, r := range runs {
		ind := "    "
		fmt.Fprintf(bw, "%sKTAP version 1\n%s# Subtest: %s\n", ind, ind, ktapName(r.title()))
		writeBody(bw, ind, r)
		st := Pass
		if r.Failed() || r.Mismatched() || r.CostRegressed() {
			st = Fail
		}
		if r.Err != nil {
			diag(bw, "", []string{"error: " + r.Err.Error()})
		}
		result(bw, "", i+1, r.title(), st, "")
	}
	return bw.Flush()
}

// WriteKselftest writes one run as a kselftest's own KTAP, what a test of
// an installed collection prints (the kernel's runner puts "# " before
// each line): the kernel and the run's notes as diagnostics, its packages
// and its verdicts at the top level, then kselftest.h's totals line.
func WriteKselftest(w io.Writer, r *Run) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "KTAP version 1")
	diag(bw, "", []string{"kernel: " + r.title()})
	writeBody(bw, "", r)
	if r.Err != nil {
		diag(bw, "", []string{"error: " + r.Err.Error()})
	}
	c, errs := r.Counts(), 0
	if r.Err != nil {
		errs = 1
	}
	fmt.Fprintf(bw, "# Totals: pass:%d fail:%d xfail:%d xpass:0 skip:%d error:%d\n", c.Pass, c.Fail, c.XFail, c.Skip, errs)
	return bw.Flush()
}

// writeBody writes a run's plan and results at ind: one result per
// package, nested per test and subtest, then one for its verdicts.
func writeBody(w io.Writer, ind string, r *Run) {
	pkgs := r.tree()
	n := len(pkgs)
	verdicts := len(r.Verdicts)+len(r.Misses) > 0
	if verdicts {
		n++
	}
	if len(r.Costs) > 0 {
		n++
	}
	fmt.Fprintf(w, "%s1..%d\n", ind, n)
	diag(w, ind, r.notes())
	for j, p := range pkgs {
		writeNode(w, ind, j+1, p)
	}
	if verdicts {
		writeVerdicts(w, ind, len(pkgs)+1, r)
	}
	if len(r.Costs) > 0 {
		writeCostsKTAP(w, ind, n, r)
	}
}

// writeVerdicts writes the run's verdicts as a subtest: one result per
// seed, "ok" when the cell matches its expectation, then one "not ok" per
// feature the kernel was expected to have and lacks (or to lack and has),
// as JSON and JUnit list them. A result is named by its seed or feature
// alone, so that its name is the same on every kernel and run; the state
// and why are the diagnostic before it.
func writeVerdicts(w io.Writer, ind string, num int, r *Run) {
	sub := ind + "    "
	n := len(r.Verdicts) + len(r.Misses)
	fmt.Fprintf(w, "%sKTAP version 1\n%s# Subtest: %s\n%s1..%d\n", sub, sub, VerdictPackage, sub, n)
	diag(w, sub, []string{"expectation: " + r.ExpectSource})
	st := Pass
	for i, v := range r.Verdicts {
		diag(w, sub, []string{v.Line()})
		vs := Pass
		if v.Mismatch() {
			vs, st = Fail, Fail
		}
		result(w, sub, i+1, string(v.Seed), vs, "")
	}
	for i, m := range r.Misses {
		diag(w, sub, []string{m.Line()})
		st = Fail
		result(w, sub, len(r.Verdicts)+i+1, string(m.Feature), Fail, "")
	}
	result(w, ind, num, VerdictPackage, st, "")
}

func writeNode(w io.Writer, ind string, num int, n *node) {
	if len(n.children) > 0 {
		sub := ind + "    "
		fmt.Fprintf(w, "%sKTAP version 1\n%s# Subtest: %s\n%s1..%d\n", sub, sub, ktapName(n.name), sub, len(n.children))
		for i, c := range n.children {
			writeNode(w, sub, i+1, c)
		}
	}
	st := n.status()
	reason := ""
	switch {
	case st == Fail && n.test != nil:
		diag(w, ind, withoutProtocol(n.test.Output))
		diag(w, ind, n.test.Kernel)
	case st == Skip && len(n.children) > 0:
		reason = "all subtests skipped"
	case st == XFail && len(n.children) > 0:
		reason = "expected failures in subtests, no pass"
	case (st == Skip || st == XFail) && n.test != nil:
		reason = n.test.Reason()
	}
	result(w, ind, num, n.name, st, reason)
}

func result(w io.Writer, ind string, num int, name string, st Status, reason string) {
	ok := "ok"
	if st == Fail {
		ok = "not ok"
	}
	fmt.Fprintf(w, "%s%s %d %s", ind, ok, num, ktapName(name))
	switch st {
	case Skip:
		fmt.Fprintf(w, " # SKIP %s", strings.ReplaceAll(reason, "#", ""))
	case XFail:
		fmt.Fprintf(w, " # XFAIL %s", strings.ReplaceAll(reason, "#", ""))
	}
	fmt.Fprintln(w)
}

func diag(w io.Writer, ind string, lines []string) {
	for _, l := range lines {
		fmt.Fprintf(w, "%s# %s\n", ind, strings.TrimSpace(l))
	}
}

// ktapName keeps a name on one line and free of the directive marker.
func ktapName(s string) string {
	return strings.NewReplacer("#", "", "\n", " ").Replace(s)
}
