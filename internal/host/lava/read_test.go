package lava

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/kcidb"
	"github.com/xmitcheck/xmitcheck/internal/host/kcidb/kcidbtest"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// recordedLog is testdata/debian-7.3.log (its README says how it was made).
func recordedLog(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/debian-7.3.log")
	assert.NilError(t, err)
	return data
}

// TestReadRecorded reads the log of a real lava-run of the collection on
// debian:7.3: the verdicts and test statuses `xmitcheck run` gives there,
// XFAILs and their reasons kept, each test's seconds, and nothing that
// says the run did not finish.
func TestReadRecorded(t *testing.T) {
	s, err := Read(bytes.NewReader(recordedLog(t)))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(s.Kernel, "debian:7.3 (7.3.4+deb13-amd64)"))
	assert.Check(t, is.Equal(s.Name, "debian:7.3"))
	assert.Check(t, is.Equal(s.Err, ""))
	assert.Check(t, s.Total > 0, "the test definition's duration")
	got := map[feature.Seed]string{}
	for _, v := range s.Verdicts {
		got[v.Seed] = string(v.State) + " want " + string(v.Want)
		assert.Check(t, v.Why != "", v.Seed)
	}
	assert.Check(t, is.DeepEqual(got, map[feature.Seed]string{
		feature.Seed000Tun: "present want present", feature.Seed000Vhost: "present want present",
		feature.Seed002: "absent want absent", feature.Seed003: "present want present",
		feature.Seed004: "present want present",
	}))
	tally := map[results.Status]int{}
	timed := 0
	for _, x := range s.Tests {
		tally[x.Status]++
		if x.Elapsed > 0 {
			timed++
		}
		if x.Status == results.XFail {
			known := strings.HasPrefix(x.Why, "known kernel issue ") || strings.HasPrefix(x.Why, "seed 002 absent")
			assert.Check(t, known, x.Why)
		}
	}
	assert.Check(t, is.DeepEqual(tally, map[results.Status]int{results.Pass: 214, results.XFail: 11}))
	assert.Check(t, timed > 200, "%d tests with their seconds", timed)
	assert.Check(t, is.Contains(s.ExpectSource, "debian:7.3"))
}

// TestReadServerLog: a LAVA server keeps the same log as a YAML list ("- "
// before each entry): it reads the same.
func TestReadServerLog(t *testing.T) {
	local, err := Read(bytes.NewReader(recordedLog(t)))
	assert.NilError(t, err)
	var server bytes.Buffer
	for line := range strings.SplitSeq(strings.TrimSpace(string(recordedLog(t))), "\n") {
		server.WriteString("- " + line + "\n")
	}
	got, err := Read(&server)
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, local))
}

// TestReadAsKCIDB: the recorded job's results make a KCIDB report that the
// schema in the tree (kcidb-io v5.3) accepts.
func TestReadAsKCIDB(t *testing.T) {
	s, err := Read(bytes.NewReader(recordedLog(t)))
	assert.NilError(t, err)
	sch := kcidbtest.Schema(t)
	var buf bytes.Buffer
	assert.NilError(t, kcidb.Write(&buf, []results.Snapshot{s}, "lava_lab"))
	report, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	assert.NilError(t, err)
	assert.NilError(t, sch.Validate(report))
	assert.Check(t, is.Contains(buf.String(), `"path": "xmitcheck.000-tun"`))
	assert.Check(t, is.Contains(buf.String(), `"path": "xmitcheck.tun.TestClassify.flag_off.qdisc_pfifo"`))
}

// logEntry writes one log entry as lava-run does.
func logEntry(lvl, msg string) string {
	return `{"dt": "2026-12-06T09:00:00", "lvl": "` + lvl + `", "msg": ` + msg + "}\n"
}

func result(name, res, set string) string {
	m := `{"case": "` + name + `", "definition": "0_xmitcheck-kselftest", "result": "` + res + `"`
	if set != "" {
		m += `, "set": "` + set + `"`
	}
	return logEntry("results", m+"}")
}

const kernelEvent = `"xmitcheck-kernel debian:6.12 6.12.117+deb13-amd64 DIR/expectations (debian:6.12)"`

// TestReadErrors: a log the test definition did not write, or whose
// results and events disagree, is an error; a job or a suite that did not
// finish is the run's error, not a green table.
func TestReadErrors(t *testing.T) {
	for name, tc := range map[string]struct{ log, want string }{
		"results only": {logEntry("results", `{"case": "job", "definition": "lava", "result": "pass"}`),
			"no xmitcheck-kernel event"},
		"verdict disagrees": {logEntry("event", kernelEvent) +
			logEntry("event", `"xmitcheck-verdict 000-tun absent present IFF_BACKPRESSURE missing"`) +
			result("000-tun", "pass", "verdicts"), `seed 000-tun: LAVA's result is "pass", but its verdict`},
		"verdict without event": {logEntry("event", kernelEvent) + result("004", "pass", "verdicts"),
			"seed 004 has a LAVA result but no xmitcheck-verdict event"},
		"not a log": {"kernel debian:7.3 7.3.4\n", "line 1 is not a LAVA log entry"},
	} {
		_, err := Read(strings.NewReader(tc.log))
		assert.Check(t, is.ErrorContains(err, tc.want), name)
	}

	log := logEntry("event", kernelEvent) +
		result("tun", "fail", "") + result("devmap", "pass", "") + result("devmap.TestOrdering", "pass", "") +
		result("qdisc", "fail", "") + result("qdisc.run", "fail", "") +
		logEntry("event", `"xmitcheck-error qdisc kernel crashed"`) +
		logEntry("error", `"Job error: test timed out"`) +
		logEntry("results",
			`{"case": "job", "definition": "lava", "result": "fail", "error_msg": "lava-test-shell timed out"}`)
	s, err := Read(strings.NewReader(log))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(s.Err, "suites/qdisc: kernel crashed; suites/tun: the kselftest runner failed it and it "+
		"wrote no results (killed at the settings' timeout?): the LAVA log has its output; "+
		"the LAVA job failed: lava-test-shell timed out (Job error: test timed out)"))
	assert.Check(t, is.Len(s.Tests, 1), "qdisc.run is the error's, not a test")
	assert.Check(t, is.Equal(s.Kernel, "debian:6.12 (6.12.117+deb13-amd64)"))
}
