package ksft

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/kcidb"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// ResultsEnv, when set in a test's environment, names a directory where
// it writes SUITE.results (WriteLabResults) for a lab's result parser: the
// LAVA test definition's script sets it.
const ResultsEnv = "XMITCHECK_RESULTS"

// Lab results are one line each, words split by spaces, the last field the
// rest of the line:
//
//	kernel NAME RELEASE EXPECTATION…
//	case CASE RESULT SECONDS STATUS WHY…
//	verdict SEED RESULT STATE WANT WHY…
//	miss FEATURE fail LINE…
//	error WHY…
//
// NAME is the kernel's name ("-" when the expectation file has no line
// for it), CASE a test's path below the collection ("tun.TestClassify.flag_off.qdisc_pfifo",
// KCIDB's path without its root), RESULT what LAVA's lava-test-case takes
// (pass, fail, skip), STATUS the test's own (pass, fail, skip, xfail) and
// WHY its reason ("-" for none), WANT the verdict the expectation wants
// ("-" for none). An error line says why the run could not finish.

// WriteLabResults writes r, the run of suite, as lab results. Its
// verdicts are those of the suite's own seeds (feature.SuiteSeeds): a
// seed's absence another suite's probe saw is in that suite's KTAP, and
// the seed's own suite judges it too.
func WriteLabResults(w io.Writer, suite, name, release string, r *results.Run) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "kernel %s %s %s\n", orDash(name), orDash(release), oneLine(r.ExpectSource))
	for _, t := range r.Leaves() {
		fmt.Fprintf(bw, "case %s %s %.3f %s %s\n", CaseName(results.ShortPackage(t.Package), t.Name), LabResult(t.Status),
			t.Elapsed.Seconds(), t.Status, orDash(oneLine(t.Why())))
	}
	own := feature.SuiteSeeds(suite)
	for _, v := range r.Verdicts {
		if !slices.Contains(own, v.Seed) {
			continue
		}
		fmt.Fprintf(bw, "verdict %s %s %s %s %s\n", v.Seed, VerdictResult(v), v.State, orDash(string(v.Want)), oneLine(v.Why))
	}
	for _, m := range r.Misses {
		fmt.Fprintf(bw, "miss %s fail %s\n", kcidb.PathElement(string(m.Feature)), oneLine(m.Line()))
	}
	if r.Err != nil {
		fmt.Fprintf(bw, "error %s\n", oneLine(r.Err.Error()))
	}
	return bw.Flush()
}

// CaseName is a test's lab case name: its suite ("tun" for suites/tun, the
// package's elements otherwise), then the test and its subtests, each made
// a KCIDB path element.
func CaseName(pkg, name string) string {
	var els []string
	for _, e := range strings.Split(strings.TrimPrefix(pkg, "suites/"), "/") {
		els = append(els, kcidb.PathElement(e))
	}
	for _, e := range strings.Split(name, "/") {
		els = append(els, kcidb.PathElement(e))
	}
	return strings.Join(els, ".")
}

// LabResult is a test's status as LAVA has it: an expected failure is a
// skip, as KCIDB has it.
func LabResult(s results.Status) string {
	switch s {
	case results.Pass:
		return "pass"
	case results.Skip, results.XFail:
		return "skip"
	}
	return "fail"
}

// VerdictResult is a verdict as a lab result: fail where it differs from
// its expectation (BROKEN and error always do), skip where the seed is
// absent and nothing judges it (the kernel lacks what the suite tests),
// else pass.
func VerdictResult(v results.Verdict) string {
	switch {
	case v.Mismatch():
		return "fail"
	case v.Want == "" && v.State == results.Absent:
		return "skip"
	}
	return "pass"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps s on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
