package report

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/host/expect"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

func TestMarkdown(t *testing.T) {
	snaps := fixture(t)
	var b bytes.Buffer
	assert.NilError(t, WriteMarkdown(&b, snaps))
	md := b.String()

	// Every row of every table has as many cells as its head.
	tables, head := 0, -1
	for i, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "|") {
			head = -1
			continue
		}
		if head < 0 {
			head = cells(l)
			tables++
			continue
		}
		assert.Check(t, is.Equal(cells(l), head), "line %d: %s", i+1, l)
	}
	assert.Check(t, is.Equal(tables, 3+12), "verdicts, kernels, tests and a table per chart")

	for _, s := range []string{
		"**3 verdicts differ from the expectation**",
		"| seed | debian:6.12 | debian:7.3 | build:no003 |",
		"| 003 | absent | ✗ **BROKEN** | ✗ **absent** |",
		"| 002 | absent | absent | — |",
		"- ✗ 003 on debian:7.3: BROKEN, want present: " +
			"`suites/qdisc.TestFastPath: fastpath_test.go:88: 12 schedules with defer_list non-empty`",
		"- ✗ 000-vhost on build:no003: error: `every test skipped",
		"| debian:7.3 (7.3.4-1\\~bpo13+1) | 7.3.4+bpo-amd64 | linux-image-7.3.4+bpo-amd64 7.3.4-1\\~bpo13+1 | " +
			"tcg | 5.02s | 4m9s | 4 pass, 2 fail, 0 skip, 2 xfail | kernels/expectations |",
		"- build:no003: feature Qdisc.defer\\_list missing where expected (`suites/qdisc.TestFastPath`)",
		// A "|" in a table is escaped, in code too; outside, it is not.
		"| `suites/tun.TestParse/len<4&&flags\\|0x80` | pass 3ms | **fail** 4ms | skip 1ms |",
		"`suites/tun.TestParse/len<4&&flags|0x80` **failed** on debian:7.3:",
		// Backticks in a message: a longer fence.
		"- `suites/tun.TestParse/len<4&&flags|0x80` skip on build:no003: ``needs `ip link` | <none> & more``",
		"- `suites/devmap.TestSameDevice` xfail on debian:6.12, debian:7.3, build:no003: " +
			"`XFAIL known kernel issue devmap-same-device",
		"**Tap threads=1: received packets/s** (rx-pps)\n\n" +
			"|  | debian:6.12 | debian:7.3 |\n" +
			"| --- | ---: | ---: |\n" +
			"| qdisc=noqueue | 402k | 410k |\n" +
			"| qdisc=pfifo | 398k | 405k |\n" +
			"| qdisc=pfifo/mode=backpressure | — | 448k (n=2, 440k–455k) |\n",
		"**Schedule senders=2: NET\\_TX softirq raises per delivered packet** (raises/pkt)",
	} {
		assert.Check(t, is.Contains(md, s))
	}
	// Multi-line failures whole, in a fenced block.
	for _, k := range []int{1, 2} {
		i := slices.IndexFunc(snaps[k].Tests, func(t results.SnapshotTest) bool { return t.Name == "TestFastPath" })
		why := snaps[k].Tests[i].Why
		assert.Check(t, is.Contains(md, "```\n"+why+"\n```\n"))
	}
}

func TestMarkdownWithoutBenchmarks(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, WriteMarkdown(&b, []results.Snapshot{{Kernel: "k", Err: "no boot in 60s <console>"}}))
	assert.Check(t, is.Contains(b.String(), "- k: the run failed: `no boot in 60s <console>`"))
	assert.Check(t, is.Contains(b.String(), "No benchmark results in these runs, so no charts"))
}

func TestMarkdownEscapes(t *testing.T) {
	for _, tc := range []struct{ in, code, text string }{
		{"plain", "`plain`", "plain"},
		{"a`b", "``a`b``", "a\\`b"},
		{"`x`", "`` `x` ``", "\\`x\\`"},
		{"a|b <c> & *d*_e_", "`a|b <c> & *d*_e_`", "a|b \\<c\\> \\& \\*d\\*\\_e\\_"},
		{"two\nlines", "`two lines`", "two lines"},
		{"", "", ""},
	} {
		assert.Check(t, is.Equal(mdCode(tc.in), tc.code), "%q", tc.in)
		assert.Check(t, is.Equal(mdText(tc.in), tc.text), "%q", tc.in)
	}
}

// cells counts a GFM table row's cells: its unescaped "|", less one.
func cells(row string) int {
	n := 0
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n - 1
}

// TestHostRow: the host's kernel row says it ran on no VM and gives no boot.
func TestHostRow(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, WriteMarkdown(&b, []results.Snapshot{{Kernel: "host", Accel: "none", Total: 24 * time.Second}}))
	assert.Check(t, is.Contains(b.String(), "| host |  |  | no VM | — | 24s |"))
}

// recordedSnapshot is debian:7.3 of the recorded run in
// ../results/testdata, judged against spec: one kernel, two suites.
func recordedSnapshot(t *testing.T, spec string) results.Snapshot {
	t.Helper()
	f, err := os.Open("../results/testdata/tun-devmap.events")
	assert.NilError(t, err)
	defer f.Close()
	runs, err := results.ReadEvents(f)
	assert.NilError(t, err)
	r := runs[1]
	r.Finish(nil)
	e, err := expect.Parse(spec)
	assert.NilError(t, err)
	r.Judge(e, "test")
	return r.Snapshot()
}

// TestMarkdownShort: a reply for one kernel lists what did not pass, and
// counts what did, per package.
func TestMarkdownShort(t *testing.T) {
	// 002 expected on 7.3: the test that saw it absent fails.
	var b bytes.Buffer
	assert.NilError(t, WriteMarkdown(&b, []results.Snapshot{recordedSnapshot(t, "000 002 004")}))
	md := b.String()
	assert.Check(t, is.Equal(strings.Count(md, "\n| `suites/"), 1), "one test row:\n%s", md)
	assert.Check(t, strings.Count(md, "\n") < 50, "%d lines:\n%s", strings.Count(md, "\n"), md)
	for _, s := range []string{
		"| 002 | ✗ **absent** |",
		"22 of 23 tests passed wherever they ran (suites/devmap 18, suites/tun 4); the others:\n",
		"| `suites/tun.TestClassify/flag=off/qdisc=pfifo` | **fail** 490ms |\n",
		"`suites/tun.TestClassify/flag=off/qdisc=pfifo` **failed** on debian:7.3",
	} {
		assert.Check(t, is.Contains(md, s))
	}
	assert.Check(t, !strings.Contains(md, "| pass "), "a passing test is counted, not listed")
}
