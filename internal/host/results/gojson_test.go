package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// jsonLines writes runs as JSON and decodes every event as a map, so a
// field left out shows.
func jsonLines(t *testing.T, runs []*Run) []map[string]any {
	t.Helper()
	var b bytes.Buffer
	assert.NilError(t, WriteJSON(&b, runs))
	var out []map[string]any
	sc := bufio.NewScanner(&b)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		assert.NilError(t, json.Unmarshal(sc.Bytes(), &m))
		out = append(out, m)
	}
	return out
}

// TestJSONTimeAndElapsed: as go test -json, every event has a Time and
// every end an Elapsed, zero included; the levels no test reported (the
// "OneDest" of t.Run("OneDest/Batch64")), the packages and the verdicts
// are xmitcheck's and get them too.
func TestJSONTimeAndElapsed(t *testing.T) {
	for name, runs := range map[string][]*Run{
		"recorded": recorded(t, expect510, expect73),
		"sample":   {sample()},
	} {
		t.Run(name, func(t *testing.T) {
			for i, e := range jsonLines(t, runs) {
				ts, _ := e["Time"].(string)
				at, err := time.Parse(time.RFC3339Nano, ts)
				assert.Check(t, err == nil && !at.IsZero(), "event %d has no Time: %v", i, e)
				switch e["Action"] {
				case "pass", "fail", "skip":
					_, ok := e["Elapsed"]
					assert.Check(t, ok, "event %d has no Elapsed: %v", i, e)
				}
			}
		})
	}
	// A level no test reported spans its subtests.
	for _, e := range jsonLines(t, recorded(t, expect510, expect73)) {
		if e["Test"] == "TestOrdering/LiveFrames/OneDest" && e["Action"] == "skip" {
			assert.Check(t, is.Equal(e["Time"], "2026-12-01T20:41:18.286642598Z"))
			assert.Check(t, e["Elapsed"].(float64) > 0, "%v", e)
			return
		}
	}
	t.Fatal("no end of TestOrdering/LiveFrames/OneDest on 5.10")
}

// TestNoMarginsLine: the line a binary ends with for the host
// (xmitcheck:{"margins":…}) stays out of what the writers show, even where
// a package's output is shown whole (5.10's devmap fails: 004 is expected).
func TestNoMarginsLine(t *testing.T) {
	runs := recorded(t, "!000 !002 004", expect73)
	assert.Assert(t, len(runs[0].Margins()) > 0, "the recorded binaries print margins")
	for name, write := range map[string]func(io.Writer, []*Run) error{
		"json": WriteJSON, "ktap": WriteKTAP, "junit": WriteJUnit,
		"summary": func(w io.Writer, runs []*Run) error { WriteSummary(w, runs); return nil },
	} {
		var b bytes.Buffer
		assert.NilError(t, write(&b, runs))
		assert.Check(t, !strings.Contains(b.String(), "margins"), "%s shows the margins line", name)
	}
	for _, s := range runs[0].Snapshot().Tests {
		assert.Check(t, !strings.Contains(s.Why, "margins"), "%s.%s", s.Package, s.Name)
	}
}
