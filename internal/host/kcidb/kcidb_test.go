package kcidb

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/host/expect"
	"github.com/xmitcheck/xmitcheck/internal/host/kcidb/kcidbtest"
	"github.com/xmitcheck/xmitcheck/internal/host/report"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// schema compiles the KCIDB schema in the tree.
func schema(t *testing.T) *jsonschema.Schema { return kcidbtest.Schema(t) }

// validate writes the snapshots' report, checks it against the schema and
// returns it, decoded.
func validate(t *testing.T, sch *jsonschema.Schema, snaps []results.Snapshot) *Report {
	t.Helper()
	var buf bytes.Buffer
	assert.NilError(t, Write(&buf, snaps, DefaultOrigin))
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	assert.NilError(t, err)
	assert.NilError(t, sch.Validate(doc))
	var r Report
	assert.NilError(t, json.Unmarshal(buf.Bytes(), &r))
	return &r
}

// matrixFixture is the report package's results.json: three kernels, every
// verdict state, every test status, a feature miss and a note.
func matrixFixture(t *testing.T) []results.Snapshot {
	t.Helper()
	snaps, err := report.Load("../report/testdata")
	assert.NilError(t, err)
	return snaps
}

// recordedRuns replays the guests' events recorded on debian:5.10 and
// debian:7.3 (../results/testdata) through the judge, as matrix does, and
// returns the snapshots matrix would write.
func recordedRuns(t *testing.T) []results.Snapshot {
	t.Helper()
	f, err := os.Open("../results/testdata/tun-devmap.events")
	assert.NilError(t, err)
	defer f.Close()
	runs, err := results.ReadEvents(f)
	assert.NilError(t, err)
	assert.Assert(t, is.Len(runs, 2))
	var snaps []results.Snapshot
	for i, r := range runs {
		r.Name = []string{"debian:5.10", "debian:7.3"}[i]
		r.Finish(nil)
		e, err := expect.Parse([]string{"!000 !004", "000 !002 004"}[i])
		assert.NilError(t, err)
		r.Judge(e, "test")
		s := r.Snapshot()
		s.Name = r.Name
		snaps = append(snaps, s)
	}
	return snaps
}

func TestValidates(t *testing.T) {
	sch := schema(t)
	for name, snaps := range map[string][]results.Snapshot{
		"matrix fixture": matrixFixture(t),
		"recorded runs":  recordedRuns(t),
	} {
		t.Run(name, func(t *testing.T) {
			r := validate(t, sch, snaps)
			assert.Check(t, is.Len(r.Checkouts, len(snaps)))
			assert.Check(t, is.Len(r.Builds, len(snaps)))
			ids := map[string]bool{}
			for _, x := range r.Tests {
				assert.Check(t, !ids[x.ID], "duplicate test id %s", x.ID)
				ids[x.ID] = true
				assert.Check(t, strings.HasPrefix(x.ID, x.BuildID+":"), x.ID)
				assert.Check(t, strings.HasPrefix(x.Path, Root+"."), x.Path)
			}
		})
	}
}

// TestSchemaRejects proves the validator reads the schema: what KCIDB
// refuses, it refuses.
func TestSchemaRejects(t *testing.T) {
	sch := schema(t)
	const test = `"id": "a:1", "build_id": "a:1", "origin": "a"`
	for name, doc := range map[string]string{
		"no version":           `{}`,
		"major 4":              `{"version": {"major": 4}}`,
		"a slash in a path":    `{"version": {"major": 5}, "tests": [{` + test + `, "path": "x/y"}]}`,
		"a status KCIDB lacks": `{"version": {"major": 5}, "tests": [{` + test + `, "status": "XFAIL"}]}`,
		"an id with no origin": `{"version": {"major": 5}, "builds": [{"id": "1", "checkout_id": "a:1", "origin": "a"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
			assert.NilError(t, err)
			assert.Check(t, sch.Validate(v) != nil)
		})
	}
}

// byPath indexes the report's tests of one build by path.
func byPath(r *Report, build int) map[string]Test {
	out := map[string]Test{}
	for _, x := range r.Tests {
		if x.BuildID == r.Builds[build].ID {
			out[x.Path] = x
		}
	}
	return out
}

func TestStatuses(t *testing.T) {
	r := validate(t, schema(t), matrixFixture(t))
	d612, d73, no003 := byPath(r, 0), byPath(r, 1), byPath(r, 2)
	for _, tc := range []struct {
		name  string
		tests map[string]Test
		path  string
		want  string
	}{
		{"absent, as expected", d612, "xmitcheck.000-tun", Pass},
		{"present, as expected", d612, "xmitcheck.004", Pass},
		{"absent, no expectation", d612, "xmitcheck.002", Done},
		{"BROKEN", d73, "xmitcheck.003", Fail},
		{"absent where present is expected", no003, "xmitcheck.003", Fail},
		{"error", no003, "xmitcheck.000-vhost", Error},
		{"an expected feature missing", no003, "xmitcheck.feature.Qdisc_defer_list", Fail},
		{"a pass", d612, "xmitcheck.tun.TestBackpressure.NoQueueTailDrop", Pass},
		{"a skip", d612, "xmitcheck.tun.TestBackpressure.Stop", Skip},
		{"an xfail", d612, "xmitcheck.devmap.TestSameDevice", Skip},
		{"a name the path cannot hold", d612, "xmitcheck.tun.TestParse.len_4__flags_0x80", Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, ok := tc.tests[tc.path]
			assert.Assert(t, ok, "no test %s", tc.path)
			assert.Check(t, is.Equal(x.Status, tc.want))
		})
	}

	broken := d73["xmitcheck.003"]
	assert.Check(t, is.Equal(broken.Misc["verdict"], "BROKEN"))
	assert.Check(t, is.Equal(broken.Misc["want"], "present"))
	assert.Check(t, broken.LogExcerpt != "", "the reason is the excerpt")
	assert.Check(t, is.Equal(d612["xmitcheck.devmap.TestSameDevice"].Misc["status"], "xfail"))
	assert.Check(t, is.Contains(d612["xmitcheck.devmap.TestSameDevice"].LogExcerpt, "devmap-same-device"))
	assert.Check(t, is.Equal(*d612["xmitcheck.tun.TestBackpressure.NoQueueTailDrop"].Duration, 1.234))

	assert.Check(t, is.Equal(r.Checkouts[1].TreeName, "debian"))
	assert.Check(t, is.Equal(r.Checkouts[1].Misc["package_version"], "7.3.4-1~bpo13+1"))
	assert.Check(t, is.Equal(r.Builds[1].ConfigName, "linux-image-7.3.4+bpo-amd64"))
	assert.Check(t, is.Equal(r.Builds[2].Misc["release"], "7.3.4-xmitcheck"))
	assert.Check(t, is.Equal(r.Checkouts[2].TreeName, ""), "a build records no tree")
	assert.Check(t, is.DeepEqual(r.Builds[2].Misc["notes"],
		[]any{"suites/vhost: booted again after a crash (kernel BUG at mm/slub.c:452)"}))
}

// TestIDs: reporting a folder again gives the same ids (KCIDB replaces
// what it has), another run of the same kernel gets others.
func TestIDs(t *testing.T) {
	var a, b bytes.Buffer
	assert.NilError(t, Write(&a, matrixFixture(t), DefaultOrigin))
	assert.NilError(t, Write(&b, matrixFixture(t), DefaultOrigin))
	assert.Check(t, is.Equal(a.String(), b.String()))

	snaps := matrixFixture(t)
	first, err := New(snaps, "lab_1")
	assert.NilError(t, err)
	assert.Check(t, strings.HasPrefix(first.Builds[1].ID, "lab_1:debian:7.3:"), first.Builds[1].ID)
	assert.Check(t, is.Equal(first.Tests[0].Origin, "lab_1"))
	snaps[1].Total += time.Millisecond
	again, err := New(snaps, "lab_1")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(first.Builds[0].ID, again.Builds[0].ID))
	assert.Check(t, first.Builds[1].ID != again.Builds[1].ID, "another run, another id")

	// A kernel given as a path, two tests on one path: ids stay unique,
	// with no / for a URL to trip on.
	path := matrixFixture(t)[2:]
	path[0].Name = "/home/u/linux/arch/x86/boot/bzImage"
	path[0].Tests = append(path[0].Tests[:0],
		results.SnapshotTest{Package: "suites/tun", Name: "TestX/a=b", Status: results.Pass},
		results.SnapshotTest{Package: "suites/tun", Name: "TestX/a_b", Status: results.Pass})
	r := validate(t, schema(t), path)
	assert.Check(t, strings.HasPrefix(r.Builds[0].ID, "xmitcheck:_home_u_linux_arch_x86_boot_bzImage:"))
	var ids []string
	for _, x := range r.Tests {
		assert.Check(t, !strings.Contains(x.ID, "/"), x.ID)
		if x.Path == "xmitcheck.tun.TestX.a_b" {
			ids = append(ids, strings.TrimPrefix(x.ID, x.BuildID+":"))
		}
	}
	assert.Check(t, is.DeepEqual(ids, []string{"tun.TestX.a_b", "tun.TestX.a_b~2"}))

	for _, origin := range []string{"", "Lab", "lab-1", "a:b"} {
		_, err := New(snaps, origin)
		assert.Check(t, is.ErrorContains(err, "KCIDB wants lower-case letters, digits and _"), origin)
	}
}

// TestUnfinished: a run that could not finish says so (ERROR), and what
// another kernel of the report ran and it did not is MISS.
func TestUnfinished(t *testing.T) {
	snaps := matrixFixture(t)[:2]
	snaps[1].Err = "boot: no console output for 120s"
	snaps[1].Verdicts = snaps[1].Verdicts[:1]
	snaps[1].Tests = snaps[1].Tests[:1]
	r := validate(t, schema(t), snaps)
	d73 := byPath(r, 1)
	assert.Check(t, is.Equal(d73["xmitcheck.run"].Status, Error))
	assert.Check(t, is.Equal(d73["xmitcheck.run"].LogExcerpt, "boot: no console output for 120s"))
	assert.Check(t, is.Equal(d73["xmitcheck.004"].Status, Miss))
	assert.Check(t, is.Equal(d73["xmitcheck.devmap.TestOrdering"].Status, Miss))
	_, ok := byPath(r, 0)["xmitcheck.run"]
	assert.Check(t, !ok, "a finished run has no run test")
}

func TestExcerpt(t *testing.T) {
	snaps := matrixFixture(t)[:1]
	long := strings.Repeat("ü", maxExcerpt) + "the last line"
	snaps[0].Tests[0].Why = long
	r := validate(t, schema(t), snaps)
	got := byPath(r, 0)["xmitcheck.tun.TestBackpressure.Stop"].LogExcerpt
	assert.Check(t, strings.HasPrefix(got, "…\n"))
	assert.Check(t, strings.HasSuffix(got, "the last line"), "the end of a transcript is kept")
	assert.Check(t, is.Equal(len([]rune(got)), maxExcerpt))
}

// TestEnvironment: each test's environment says where it ran in words and
// in fields, the host's run ("none") as plainly as a VM's.
func TestEnvironment(t *testing.T) {
	snaps := matrixFixture(t)[:2]
	snaps[0].Accel, snaps[1].Accel = "none", "tcg"
	r := validate(t, schema(t), snaps)
	host := byPath(r, 0)["xmitcheck.devmap.TestOrdering"].Environment
	assert.Assert(t, host != nil)
	assert.Check(t, is.Equal(host.Comment, "the running kernel, no VM"))
	assert.Check(t, is.DeepEqual(host.Misc, map[string]any{"vm": false}))
	vm := byPath(r, 1)["xmitcheck.devmap.TestOrdering"].Environment
	assert.Assert(t, vm != nil)
	assert.Check(t, is.Equal(vm.Comment, "a qemu guest under TCG (qemu's CPU emulator, no KVM)"))
	assert.Check(t, is.DeepEqual(vm.Misc, map[string]any{"vm": true, "accel": "tcg"}))
}
