package results

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/cost"
)

// WriteSummary writes, per kernel, its tally line and the output of every
// failed test, then the closing tally of all kernels.
func WriteSummary(w io.Writer, runs []*Run) {
	var total Tally
	for _, r := range runs {
		c := r.Counts()
		total = total.add(c)
		for _, t := range r.Tests {
			if t.Status != Fail || r.hasChildren(t) || (t.Name == "" && r.anyFailed(t.Package)) {
				continue
			}
			name := ShortPackage(t.Package) + "." + t.Name
			if t.Name == "" {
				name = ShortPackage(t.Package) + " (the test binary itself)"
			}
			fmt.Fprintf(w, "--- FAIL: %s %s\n", r.Kernel, name)
			for _, l := range append(withoutProtocol(t.Output), t.Kernel...) {
				if t.Judged != "" && strings.HasPrefix(strings.TrimSpace(l), "--- ") {
					continue // the guest's own end, which the judge changed
				}
				fmt.Fprintf(w, "    %s\n", l)
			}
			if t.Judged != "" {
				fmt.Fprintf(w, "    xmitcheck: %s\n", t.Judged)
			}
		}
		timing := ""
		switch {
		case r.Total == 0:
		case NoVM(r.Accel):
			timing = fmt.Sprintf(" (no VM, total %v)", r.Total.Round(time.Millisecond))
		default:
			timing = fmt.Sprintf(" (%s, boot-to-first-test %v, total %v)",
				r.Accel, r.BootToFirstTest.Round(time.Millisecond), r.Total.Round(time.Millisecond))
		}
		fmt.Fprintf(w, "%s: %v%s\n", r.Kernel, c, timing)
		writeReasons(w, r)
		for _, n := range r.Noted {
			fmt.Fprintf(w, "  noted: kernel report %s\n", n)
		}
		for _, n := range r.Raced {
			fmt.Fprintf(w, "  raced: %s\n", n)
		}
		if r.Err != nil {
			fmt.Fprintf(w, "%s: %v\n", r.Kernel, r.Err)
		}
	}
	fmt.Fprintln(w, total)
}

// WriteList writes what the binaries listed (go test -list), per kernel
// and package: the names each printed, nothing else it said.
func WriteList(w io.Writer, runs []*Run) {
	for _, r := range runs {
		for _, t := range r.Tests {
			if t.Name != "" {
				continue
			}
			fmt.Fprintf(w, "%s %s:\n", r.Kernel, ShortPackage(t.Package))
			for _, l := range t.Output {
				if l != "" && !isSummaryLine(l) && !isProtocolLine(l) {
					fmt.Fprintf(w, "    %s\n", l)
				}
			}
		}
	}
}

// writeReasons names every skipped and xfail leaf test of the run, grouped
// by reason (the probe that decided a skip, the defect an XFAIL saw).
func writeReasons(w io.Writer, r *Run) {
	for _, st := range []Status{XFail, Skip} {
		byReason := map[string][]string{}
		var reasons []string
		for _, t := range r.Tests {
			if t.Status != st || t.Name == "" || r.hasChildren(t) {
				continue
			}
			why := reasonKey(t.Reason())
			if byReason[why] == nil {
				reasons = append(reasons, why)
			}
			byReason[why] = append(byReason[why], ShortPackage(t.Package)+"."+t.Name)
		}
		for _, why := range reasons {
			fmt.Fprintf(w, "  %s %d: %s: %s\n", st, len(byReason[why]), why, strings.Join(byReason[why], " "))
		}
	}
}

// reasonKey is a reason up to its first ": " outside parentheses (a known
// issue's name, an absent seed), so tests with one cause and different figures group
// together; a long reason without one is cut.
func reasonKey(why string) string {
	if i := strings.Index(why, ": "); i > 0 && i < 80 && !strings.Contains(why[:i], "(") {
		return why[:i]
	}
	if len(why) > 160 {
		return why[:160] + "…"
	}
	return why
}

// WriteVerdicts writes the verdict table (a row per seed, a column per
// kernel; a cell that differs from its expectation carries "≠ want"), then
// a line for every cell that is not plainly present: the probe and what it
// read, the failing test and its first failing line, or the error; then
// every expected feature a probe found missing.
func WriteVerdicts(w io.Writer, runs []*Run) {
	header := []string{"seed"}
	for _, r := range runs {
		header = append(header, r.Kernel)
	}
	rows := [][]string{header}
	for _, s := range feature.Seeds {
		row, any := []string{string(s.Seed)}, false
		for _, r := range runs {
			cell := "—"
			if v, ok := r.verdict(s.Seed); ok {
				cell, any = string(v.State), true
				if v.Mismatch() && v.Want != "" && v.Want != v.State {
					cell += " ≠ " + string(v.Want)
				}
			}
			row = append(row, cell)
		}
		if any {
			rows = append(rows, row)
		}
	}
	if len(rows) == 1 {
		return
	}
	fmt.Fprintln(w, "verdicts:")
	writeTable(w, rows)
	for _, r := range runs {
		for _, v := range r.Verdicts {
			if v.State == Present && !v.Mismatch() {
				continue
			}
			want := ""
			if v.Want != "" {
				want = " (want " + string(v.Want) + ")"
			}
			fmt.Fprintf(w, "  %s %s %s%s: %s\n", r.Kernel, v.Seed, v.State, want, v.Why)
		}
		for _, m := range r.Misses {
			fmt.Fprintf(w, "  %s feature %s missing, expected present (%s): %s\n", r.Kernel, m.Feature, m.Test, m.Probe)
		}
		if len(r.Verdicts) > 0 {
			fmt.Fprintf(w, "  %s expectation: %s\n", r.Kernel, r.ExpectSource)
		}
	}
}

func (r *Run) verdict(s feature.Seed) (Verdict, bool) {
	for _, v := range r.Verdicts {
		if v.Seed == s {
			return v, true
		}
	}
	return Verdict{}, false
}

// writeTable writes rows as left-aligned columns.
func writeTable(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, c := range row {
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)+2))
			}
		}
		fmt.Fprintln(w, "  "+b.String())
	}
}

// WriteVerdictsMarkdown writes the verdict table as Markdown, each cell
// with its reason where it is not plainly present.
func WriteVerdictsMarkdown(w io.Writer, runs []*Run) {
	fmt.Fprint(w, "| seed |")
	for _, r := range runs {
		fmt.Fprintf(w, " %s |", r.Kernel)
	}
	fmt.Fprint(w, "\n| --- |")
	for range runs {
		fmt.Fprint(w, " --- |")
	}
	fmt.Fprintln(w)
	for _, s := range feature.Seeds {
		row, any := "| "+string(s.Seed)+" |", false
		for _, r := range runs {
			cell := "—"
			if v, ok := r.verdict(s.Seed); ok {
				any = true
				cell = "**" + string(v.State) + "**"
				if v.Mismatch() && v.Want != "" && v.Want != v.State {
					cell += " (want " + string(v.Want) + ")"
				}
				if v.State != Present {
					cell += ": " + strings.ReplaceAll(v.Why, "|", "\\|")
				}
			}
			row += " " + cell + " |"
		}
		if any {
			fmt.Fprintln(w, row)
		}
	}
}

// NoVM reports whether a run on accel booted nothing: the host's runs
// have accelerator "none".
func NoVM(accel string) bool { return accel == "" || accel == "none" }

// WriteCosts writes each kernel's cost rows (run --cost) as a table.
func WriteCosts(w io.Writer, runs []*Run) {
	for _, r := range runs {
		cost.WriteTable(w, "cost on "+r.Kernel, r.Costs)
	}
}
