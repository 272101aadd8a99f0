package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

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
