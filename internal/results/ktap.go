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
		pkgs := r.tree()
		ind := "    "
		fmt.Fprintf(bw, "%sKTAP version 1\n%s# Subtest: %s\n%s1..%d\n", ind, ind, ktapName(r.Kernel), ind, len(pkgs))
		for j, p := range pkgs {
			writeNode(bw, ind, j+1, p)
		}
		st := Pass
		if r.Failed() {
			st = Fail
		}
		if r.Err != nil {
			diag(bw, "", []string{"error: " + r.Err.Error()})
		}
		result(bw, "", i+1, r.Kernel, st, "")
	}
	return bw.Flush()
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
		diag(w, ind, n.test.Output)
		diag(w, ind, n.test.Kernel)
	case st == Skip && len(n.children) > 0:
		reason = "all subtests skipped"
	case st == Skip && n.test != nil:
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
	if st == Skip {
		// A test that skips because a known kernel defect showed up
		// exactly as expected is kselftest's XFAIL.
		directive := "SKIP"
		if r, ok := strings.CutPrefix(reason, "XFAIL "); ok {
			directive, reason = "XFAIL", r
		}
		fmt.Fprintf(w, " # %s %s", directive, strings.ReplaceAll(reason, "#", ""))
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
