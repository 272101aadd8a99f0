package cost

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Figures is the judged measure of r in one line: its change with the
// interval, the A/A floor, and what the claim is in its terms.
func (r Row) Figures() string {
	m := r.JudgedMeasure()
	if m.Err != "" {
		return m.Err
	}
	return fmt.Sprintf("%s %s [%s, %s], A/A floor ±%.1f %%, claim %s, %d rounds",
		m.Unit, signed(m.Change.Pct), signed(m.Change.Lo), signed(m.Change.Hi), m.Floor(), signed(m.Claim), m.Change.Rounds)
}

// Line is r in one line: seed, row, judgment and figures.
func (r Row) Line() string {
	l := fmt.Sprintf("%s %s: %s (%s)", r.Seed, r.Row, r.Judgment, r.Figures())
	if r.Note != "" {
		l += "; " + r.Note
	}
	return l
}

// signed formats a percentage with its sign.
func signed(pct float64) string { return fmt.Sprintf("%+.1f %%", pct) }

// WriteTable writes rows as an aligned table, one line a row, under the
// header title; then the method and, per row, why the judged measure.
func WriteTable(w io.Writer, title string, rows []Row) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "%s:\n", title)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  seed\trow\tclaim\tjudged on\tB vs A [95 % interval]\tA/A floor\tjudgment")
	for _, r := range rows {
		m, own := r.JudgedMeasure(), r.Measures[0]
		measured, floor := m.Err, ""
		if m.Err == "" {
			measured = fmt.Sprintf("%s [%s, %s]", signed(m.Change.Pct), signed(m.Change.Lo), signed(m.Change.Hi))
			floor = fmt.Sprintf("±%.1f %%", m.Floor())
		}
		judged := m.Unit
		if m.Unit != own.Unit {
			judged = fmt.Sprintf("%s (%s)", m.Unit, signed(m.Claim))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s %s\t%s\t%s\t%s\t%s\n",
			r.Seed, r.Row, own.Unit, signed(own.Claim), judged, measured, floor, r.Judgment)
	}
	tw.Flush()
	methods := map[string]bool{}
	for _, r := range rows {
		if !methods[r.Method] {
			methods[r.Method] = true
			fmt.Fprintf(w, "  method: %s\n", r.Method)
		}
	}
	for _, r := range rows {
		switch {
		case r.Judgment == Unmeasured:
			fmt.Fprintf(w, "  %s %s: %s\n", r.Seed, r.Row, r.Why)
		case r.Note != "":
			fmt.Fprintf(w, "  %s %s: %s\n", r.Seed, r.Row, r.Note)
		}
	}
}

// WriteMarkdown writes rows as a Markdown table: the claim as its source
// states it, the sides, every measure with its interval and floor, the
// judgment.
func WriteMarkdown(w io.Writer, rows []Row) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "| seed | row | claim | measure | B vs A [95 %] | A/A floor | judgment |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | ---: | ---: | --- |")
	for _, r := range rows {
		for i, m := range r.Measures {
			seed, row, says, judgment := "", "", "", ""
			if i == 0 {
				seed, row, says = string(r.Seed), r.Row, r.Says
			}
			if m.Unit == r.Judged {
				judgment = "**" + string(r.Judgment) + "**"
			}
			if m.Err != "" {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | | %s |\n", seed, row, says, m.Unit, m.Err, judgment)
				continue
			}
			if i == 0 && r.Note != "" {
				row += " (" + r.Note + ")"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s (claim %s) | %s [%s, %s] | ±%.1f %% | %s |\n", seed, row, says,
				m.Unit, signed(m.Claim), signed(m.Change.Pct), signed(m.Change.Lo), signed(m.Change.Hi), m.Floor(), judgment)
		}
	}
	seen := map[string]bool{}
	var methods, sides []string
	for _, r := range rows {
		if !seen[r.Method] {
			seen[r.Method] = true
			methods = append(methods, r.Method)
		}
		if s := fmt.Sprintf("%s: A is %s, B %s", r.Seed, r.A, r.B); !seen[s] {
			seen[s] = true
			sides = append(sides, s)
		}
	}
	fmt.Fprintf(w, "\nMethod: %s. Sides: %s. The judged measure (bold) is the claim's own on KVM and the host, "+
		"under TCG the one with the smallest A/A floor.\n", strings.Join(methods, "; "), strings.Join(sides, "; "))
}

// ID names r as a test: its seed and its row, every run of anything but
// letters and digits made one _ ("000-tun/tap_1_sending_thread_received").
func (r Row) ID() string {
	var b strings.Builder
	sep := false
	for _, c := range strings.ToLower(r.Row) {
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(c)
			sep = false
			continue
		}
		sep = true
	}
	return string(r.Seed) + "/" + b.String()
}
