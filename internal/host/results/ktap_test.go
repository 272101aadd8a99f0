package results

import (
	"bytes"
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
