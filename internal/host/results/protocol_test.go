package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// withProfiles is testdata/tun-devmap.events with a profile line in every
// test before its end, as the guest prints them now.
func withProfiles(t *testing.T) io.Reader {
	t.Helper()
	f, err := os.Open("testdata/tun-devmap.events")
	assert.NilError(t, err)
	defer f.Close()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e Event
		assert.NilError(t, json.Unmarshal(sc.Bytes(), &e))
		if e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			p := feature.Profile{Setup: 10 * time.Millisecond, Teardown: time.Millisecond}
			line := e
			line.Action, line.Elapsed, line.Output = "output", 0, "    profile.go:1: "+feature.ProfileLine(p)+"\n"
			assert.NilError(t, enc.Encode(line))
		}
		assert.NilError(t, enc.Encode(e))
	}
	assert.NilError(t, sc.Err())
	return &out
}

// TestNoProfileLines: the profile lines stay out of what the writers show,
// even where a test's output is shown whole (5.10's devmap fails: 004 is
// expected), and change no verdict.
func TestNoProfileLines(t *testing.T) {
	runs, err := ReadEvents(withProfiles(t))
	assert.NilError(t, err)
	plain := recorded(t, expect510, expect73)
	for i, r := range runs {
		r.Name = []string{"debian:5.10", "debian:7.3"}[i]
		r.Finish(nil)
		e, err := expect.Parse([]string{"!000 !002 004", expect73}[i])
		assert.NilError(t, err)
		r.Judge(e, "test")
	}
	for i := range runs {
		assert.Check(t, is.DeepEqual(states(runs[i]), states(plain[i])))
	}
	for i, v := range runs[1].Verdicts {
		assert.Check(t, is.Equal(v.Line(), plain[1].Verdicts[i].Line()), "the skips' reasons stay")
	}
	assert.Check(t, runs[0].Failed(), "5.10's devmap fails where 004 is expected")
	for name, write := range map[string]func(io.Writer, []*Run) error{
		"json": WriteJSON, "ktap": WriteKTAP, "junit": WriteJUnit,
		"summary": func(w io.Writer, runs []*Run) error { WriteSummary(w, runs); return nil },
	} {
		var b bytes.Buffer
		assert.NilError(t, write(&b, runs))
		assert.Check(t, !strings.Contains(b.String(), "profile"), "%s shows a profile line", name)
	}
	for _, s := range runs[0].Snapshot().Tests {
		assert.Check(t, !strings.Contains(s.Why, "profile"), "%s.%s", s.Package, s.Name)
	}
}
