package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/host/cost"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// WriteMarkdown writes the report as Markdown for a mailing-list reply:
// the verdict table and the reason of every cell that is not plainly
// present, the kernels, the tests that did not pass everywhere (those that
// did are counted) with every failure, skip and expected failure's
// message, and each chart's values as a table.
func WriteMarkdown(w io.Writer, snaps []results.Snapshot) error {
	v := newView(snaps)
	var b bytes.Buffer
	fmt.Fprintf(&b, "## xmitcheck: %s\n\n", results.Count(len(v.Kernels), "kernel"))
	writeVerdicts(&b, v)
	writeCosts(&b, v)
	writeKernels(&b, v)
	writeTests(&b, v)
	writeBenchmarks(&b, v)
	_, err := w.Write(b.Bytes())
	return err
}

// writeCosts writes each kernel's cost rows, if any.
func writeCosts(b *bytes.Buffer, v view) {
	for _, k := range v.Kernels {
		if len(k.Costs) == 0 {
			continue
		}
		fmt.Fprintf(b, "### Cost on %s\n\n", mdText(k.Kernel))
		cost.WriteMarkdown(b, k.Costs)
		b.WriteString("\n")
	}
}

func writeVerdicts(b *bytes.Buffer, v view) {
	if len(v.Seeds) == 0 {
		b.WriteString("No kernel has a verdict.\n\n")
		return
	}
	if v.Mismatches > 0 {
		fmt.Fprintf(b, "**%d verdicts differ from the expectation** (marked ✗; BROKEN and error always do).\n\n",
			v.Mismatches)
	} else {
		b.WriteString("Every verdict is as expected.\n\n")
	}
	tableHead(b, "seed", v.Kernels)
	for _, s := range v.Seeds {
		cells := []string{mdText(string(s.Seed))}
		for _, c := range s.Cells {
			cell := c.Text()
			if c.Tested && c.Mismatch() {
				cell = "✗ **" + cell + "**"
			}
			cells = append(cells, cell)
		}
		tableRow(b, cells)
	}
	b.WriteString("\n")
	for _, s := range v.Seeds {
		for k, c := range s.Cells {
			if !c.Tested || c.State == results.Present && !c.Mismatch() {
				continue
			}
			mark, want := "", ""
			if c.Mismatch() {
				mark = "✗ "
			}
			if c.Want != "" {
				want = ", want " + string(c.Want)
			}
			fmt.Fprintf(b, "- %s%s on %s: %s%s: %s\n",
				mark, mdText(string(s.Seed)), mdText(v.Kernels[k].Short), c.State, want, mdCode(c.Why))
		}
	}
	b.WriteString("\n")
}

func writeKernels(b *bytes.Buffer, v view) {
	b.WriteString("### Kernels\n\n" +
		"| kernel | release | package | ran on | boot to first test | total | tests | expectation |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, k := range v.Kernels {
		tableRow(b, []string{
			mdText(k.Kernel), mdText(k.Release), mdText(k.Package),
			ranOn(k.Accel), boot(k.Accel, k.BootToFirstTest), dur(k.Total),
			fmt.Sprintf("%d pass, %d fail, %d skip, %d xfail", k.Pass, k.Fail, k.Skip, k.XFail), mdText(k.ExpectSource),
		})
	}
	b.WriteString("\n")
	for _, k := range v.Kernels {
		if k.Err != "" {
			fmt.Fprintf(b, "- %s: the run failed: %s\n", mdText(k.Short), mdCode(k.Err))
		}
		for _, m := range k.Misses {
			if m.Present {
				fmt.Fprintf(b, "- %s: feature %s present where expected absent (%s)\n",
					mdText(k.Short), mdText(string(m.Feature)), mdCode(m.Test))
				continue
			}
			fmt.Fprintf(b, "- %s: feature %s missing where expected (%s): %s\n",
				mdText(k.Short), mdText(string(m.Feature)), mdCode(m.Test), mdCode(m.Probe))
		}
		for _, n := range k.Notes {
			fmt.Fprintf(b, "- %s: %s\n", mdText(k.Short), mdText(n))
		}
	}
	b.WriteString("\n")
}

func writeTests(b *bytes.Buffer, v view) {
	b.WriteString("### Tests\n\n")
	if len(v.Tests) == 0 {
		b.WriteString("No kernel ran a test.\n\n")
		return
	}
	// A test that passed wherever it ran is counted, per package, not
	// listed: a reply shows what did not pass.
	var shown []testRow
	var pkgs []string
	passed := map[string]int{}
	for _, t := range v.Tests {
		if !t.passed() {
			shown = append(shown, t)
			continue
		}
		if passed[t.pkg()] == 0 {
			pkgs = append(pkgs, t.pkg())
		}
		passed[t.pkg()]++
	}
	if n := len(v.Tests) - len(shown); n > 0 {
		var per []string
		for _, p := range pkgs {
			per = append(per, fmt.Sprintf("%s %d", mdText(p), passed[p]))
		}
		fmt.Fprintf(b, "%d of %d tests passed wherever they ran (%s)", n, len(v.Tests), strings.Join(per, ", "))
		if len(shown) == 0 {
			b.WriteString(".\n\n")
			return
		}
		b.WriteString("; the others:\n\n")
	}
	tableHead(b, "test", v.Kernels)
	// Each message once, with the kernels that gave it.
	type message struct {
		test, why string
		status    results.Status
		kernels   []string
	}
	var msgs []*message
	for _, t := range shown {
		cells := []string{mdCode(t.Name)}
		seen := map[string]*message{}
		for k, c := range t.Cells {
			cell := c.Text()
			if c.Status == results.Fail {
				cell = "**" + cell + "**"
			}
			cells = append(cells, strings.TrimSpace(cell+" "+c.Took()))
			if c.Why == "" {
				continue
			}
			key := string(c.Status) + "\x00" + c.Why
			if seen[key] == nil {
				seen[key] = &message{test: t.Name, why: c.Why, status: c.Status}
				msgs = append(msgs, seen[key])
			}
			seen[key].kernels = append(seen[key].kernels, mdText(v.Kernels[k].Short))
		}
		tableRow(b, cells)
	}
	b.WriteString("\n")
	for _, m := range msgs {
		if m.status != results.Fail {
			continue
		}
		fence := strings.Repeat("`", max(3, longestRun(m.why, '`')+1))
		fmt.Fprintf(b, "%s **failed** on %s:\n\n%s\n%s\n%s\n\n",
			mdCode(m.test), strings.Join(m.kernels, ", "), fence, strings.TrimRight(m.why, "\n"), fence)
	}
	for _, m := range msgs {
		if m.status != results.Fail {
			fmt.Fprintf(b, "- %s %s on %s: %s\n", mdCode(m.test), m.status, strings.Join(m.kernels, ", "), mdCode(m.why))
		}
	}
	b.WriteString("\n")
}

func writeBenchmarks(b *bytes.Buffer, v view) {
	b.WriteString("### Benchmarks\n\n")
	switch {
	case !v.Benchmarks:
		b.WriteString("No benchmark results in these runs, so no charts (the suites' benchmarks run with -bench).\n\n")
	case len(v.Charts) == 0:
		var units []string
		for _, m := range metrics {
			units = append(units, m.Unit)
		}
		fmt.Fprintf(b, "No benchmark reported %s, so no charts.\n\n", strings.Join(units, ", "))
	}
	for _, p := range v.BenchProblems {
		fmt.Fprintf(b, "- benchmark line not read: %s\n", mdCode(p))
	}
	for i, c := range v.Charts {
		l := layout(i, c, v.Kernels)
		fmt.Fprintf(b, "**%s** (%s)\n\n", mdText(c.Title), mdText(c.Unit))
		head := []string{""}
		for _, k := range l.Kernels {
			head = append(head, mdText(k))
		}
		tableRow(b, head)
		b.WriteString("| --- |" + strings.Repeat(" ---: |", len(l.Kernels)) + "\n")
		for _, r := range l.Rows {
			tableRow(b, append([]string{mdText(r.Series)}, r.Cells...))
		}
		b.WriteString("\n")
	}
}

func tableHead(b *bytes.Buffer, first string, ks []kernel) {
	cells := []string{first}
	for _, k := range ks {
		cells = append(cells, mdText(k.Short))
	}
	tableRow(b, cells)
	b.WriteString("|" + strings.Repeat(" --- |", len(cells)) + "\n")
}

// tableRow writes a row of a GFM table; a "|" in a cell, code spans
// included, is escaped (GFM splits cells before it reads code spans).
func tableRow(b *bytes.Buffer, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
	}
	b.WriteString("\n")
}

// mdText escapes s for running Markdown text: every character CommonMark
// could take for markup; line breaks become spaces.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range strings.Join(strings.Fields(s), " ") {
		if strings.ContainsRune("\\`*_[]<>~&#!", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCode makes s one line of inline code: a backtick fence longer than any
// run of backticks in s.
func mdCode(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	most, run := 0, 0
	for i := range len(s) {
		if s[i] == c {
			run++
			most = max(most, run)
		} else {
			run = 0
		}
	}
	return most
}
