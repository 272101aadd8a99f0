package results

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestKTAPVerdicts: a verdict's result is named by its seed alone, the
// same on every kernel whatever its state (the state and why are the
// diagnostic before it), and the verdicts block holds the same tests as
// the JSON's verdicts package, a missing feature included.
func TestKTAPVerdicts(t *testing.T) {
	// 5.10 told it has 000-tun: its probe finds IFF_BACKPRESSURE missing.
	runs := recorded(t, "000-tun !000-vhost !002 !004", expect73)
	assert.Assert(t, is.Len(runs[0].Misses, 1))
	var b bytes.Buffer
	assert.NilError(t, WriteKTAP(&b, runs))
	out := b.String()
	checkKTAP(t, out)

	blocks := strings.Split(out, "        # Subtest: verdicts\n")
	assert.Assert(t, is.Len(blocks, 3))
	result := regexp.MustCompile(`(?m)^        (?:not )?ok \d+ (.*)$`)
	end := regexp.MustCompile(`(?m)^    (?:not )?ok \d+ verdicts$`)
	var names [2][]string
	for i, block := range blocks[1:] {
		block = block[:end.FindStringIndex(block)[0]]
		for _, m := range result.FindAllStringSubmatch(block, -1) {
			names[i] = append(names[i], m[1])
		}
		assert.Check(t, is.DeepEqual(names[i], jsonTests(t, runs[i], "verdicts")), "kernel %d", i)
	}
	assert.Check(t, is.DeepEqual(names[0], []string{"000-tun", "000-vhost", "002", "004", "IFF_BACKPRESSURE"}))
	assert.Check(t, is.DeepEqual(names[1], []string{"000-tun", "002", "004"}))
	for _, want := range []string{
		"        # 000-tun: absent (want present): IFF_BACKPRESSURE (TUNGETFEATURES=0x7133 lacks 0x80)\n" +
			"        not ok 1 000-tun\n",
		"        # kernel lacks IFF_BACKPRESSURE (TUNGETFEATURES=0x7133 lacks 0x80), expected to have it; " +
			"seen by suites/tun.TestProbe\n        not ok 5 IFF_BACKPRESSURE\n    not ok 3 verdicts\n",
		"        ok 1 000-tun\n",
	} {
		assert.Check(t, is.Contains(out, want))
	}
}

// jsonTests lists the tests of r's package pkg in its JSON, in order.
func jsonTests(t *testing.T, r *Run, pkg string) []string {
	t.Helper()
	var out []string
	for _, e := range jsonLines(t, []*Run{r}) {
		name, _ := e["Test"].(string)
		if e["Action"] == "run" && e["Package"] == label(r)+"/"+pkg && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// TestWriteKselftest: one run as a kselftest's own KTAP: the kernel as a
// diagnostic, a result per package and one for the verdicts at the top
// level, each seed's state in the diagnostic before its result, and
// kselftest.h's totals last.
func TestWriteKselftest(t *testing.T) {
	runs := recorded(t, expect510, expect73)
	var b bytes.Buffer
	assert.NilError(t, WriteKselftest(&b, runs[1]))
	out := b.String()
	checkKTAP(t, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Check(t, is.Equal(lines[0], "KTAP version 1"))
	assert.Check(t, is.Equal(lines[1], "# kernel: debian:7.3 (7.3.4-1~bpo13+1)"))
	assert.Check(t, is.Equal(lines[2], "1..3"), "two packages and the verdicts")
	assert.Check(t, is.Contains(out, "\nok 1 suites/devmap\n"))
	assert.Check(t, is.Contains(out, "\nok 2 suites/tun\n"))
	assert.Check(t, is.Contains(out, "\n    # 000-tun: present (want present): passed:"))
	assert.Check(t, is.Contains(out, "\nok 3 verdicts\n"))
	c := runs[1].Counts()
	assert.Check(t, is.Equal(lines[len(lines)-1],
		fmt.Sprintf("# Totals: pass:%d fail:0 xfail:%d xpass:0 skip:%d error:0", c.Pass, c.XFail, c.Skip)))

	b.Reset()
	runs = recorded(t, "000 !002 004", expect73) // 5.10 told it has 000 and 004
	assert.NilError(t, WriteKselftest(&b, runs[0]))
	checkKTAP(t, b.String())
	assert.Check(t, is.Contains(b.String(), "\nnot ok 3 verdicts\n"))
	assert.Check(t, is.Contains(b.String(), "\n    not ok 1 000-tun\n"))
}
