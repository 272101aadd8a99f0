package report

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

func TestHTML(t *testing.T) {
	snaps := fixture(t)
	var b bytes.Buffer
	assert.NilError(t, WriteHTML(&b, snaps))
	page := b.String()
	text := html.UnescapeString(page)

	// Self-contained: nothing to run or fetch, and a policy that forbids it.
	csp := `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`
	assert.Check(t, is.Contains(page, csp))
	for _, s := range []string{"<script", "src=", "url(", "@import", `href="http`} {
		assert.Check(t, !strings.Contains(page, s), "the page has %q", s)
	}

	// What the JSON holds that would be markup unescaped: there, as text.
	for _, s := range []string{
		"len<4&&flags|0x80",
		`want <nil>, got &errors.errorString{s:"flags|0x80 & <mask>"}`,
		"needs `ip link` | <none> & more",
	} {
		assert.Check(t, is.Contains(text, s))
		assert.Check(t, !strings.Contains(page, s), "%q is not escaped", s)
	}
	for _, s := range []string{"<mask>", "<none>", "<nil>"} {
		assert.Check(t, !strings.Contains(page, s), "the page has %q", s)
	}
	// The whole multi-line failure, on hover (title) and on click (pre).
	why := snaps[1].Tests[5].Why
	assert.Assert(t, strings.Contains(why, "\n"))
	assert.Check(t, is.Equal(strings.Count(text, why), 2), "the failure of %s, in title and pre", snaps[1].Tests[5].Name)

	// Versions, every verdict and reason, the marked cells.
	for _, s := range snaps {
		for _, want := range []string{s.Kernel, s.Release, s.Package} {
			assert.Check(t, is.Contains(text, want))
		}
		for _, v := range s.Verdicts {
			assert.Check(t, is.Contains(text, v.Why))
		}
	}
	assert.Check(t, is.Equal(strings.Count(page, ` mismatch"`), 3))
	for _, s := range []string{
		`<td class="v-BROKEN mismatch"`, `<td class="v-absent mismatch"`, `<td class="v-error mismatch"`,
		`✗ want present`, `✗ never expected`, `<td class="untested"><span class="state">—</span>`,
	} {
		assert.Check(t, is.Contains(page, s))
	}
	for _, s := range []string{`<td class="t-pass"`, `<td class="t-fail"`, `<td class="t-skip"`, `<td class="t-xfail"`} {
		assert.Check(t, is.Contains(page, s))
	}
	assert.Check(t, is.Contains(text, "feature Qdisc.defer_list missing where expected (suites/qdisc.TestFastPath)"))

	// Charts: 2 benchmarks × 2 groups × 3 units; Tap has 5 bars a chart
	// (2 kernels × 2 variants, and 1), Schedule 2; two variants ran twice
	// on a kernel: a whisker in each of their 3 charts.
	assert.Check(t, is.Equal(strings.Count(page, `<figure class="chart"`), 12))
	assert.Check(t, is.Equal(strings.Count(page, `<rect class="bar`), 6*5+6*2))
	assert.Check(t, is.Equal(strings.Count(page, `<line class="whisker"`), 6))
	assert.Check(t, is.Contains(page, "Tap threads=1: received packets/s"))
	assert.Check(t, !strings.Contains(page, "no charts"))
}

func TestHTMLWithoutCharts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"no benchmarks", nil, []string{
			"No benchmark results in these runs, so no charts", "the run failed: no boot in 60s &lt;console&gt;",
		}},
		{"no charted unit", []string{"BenchmarkX-2 \t 10\t 5 ns/op\t 3 allocs/op"}, []string{
			"No benchmark reported rx-pps, tx-pps, lost/s, raises/pkt, so no charts",
		}},
		{"a line benchfmt cannot read", []string{"BenchmarkX-2 \t ten\t 5 ns/op"}, []string{
			"No benchmark reported", "benchmark line not read: k:1: ",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			snaps := []results.Snapshot{{Kernel: "k", Err: "no boot in 60s <console>", Benchmarks: tc.lines}}
			assert.NilError(t, WriteHTML(&b, snaps))
			for _, s := range tc.want {
				assert.Check(t, is.Contains(b.String(), s))
			}
			assert.Check(t, !strings.Contains(b.String(), "<svg"))
		})
	}
}

// TestHTMLFailedFirst: the test table brings the tests that failed on any
// kernel to the top, the others in the order they ran.
func TestHTMLFailedFirst(t *testing.T) {
	snaps := fixture(t)
	failed := map[string]bool{}
	for _, s := range snaps {
		for _, x := range s.Tests {
			if x.Status == results.Fail {
				failed[x.Package+"."+x.Name] = true
			}
		}
	}
	assert.Assert(t, len(failed) > 0)
	var b bytes.Buffer
	assert.NilError(t, WriteHTML(&b, snaps))
	var rows []bool
	row := regexp.MustCompile(`<th scope="row" class="test">([^<]*)</th>`)
	for _, m := range row.FindAllStringSubmatch(b.String(), -1) {
		rows = append(rows, failed[html.UnescapeString(m[1])])
	}
	assert.Assert(t, len(rows) > len(failed))
	for i, f := range rows {
		assert.Check(t, is.Equal(f, i < len(failed)), "row %d", i+1)
	}
}
