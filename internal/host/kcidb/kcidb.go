package kcidb

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/cost"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// The schema version the report declares: the newest of kcidb-io
// (testdata/kcidb-io.schema.v5.3.json).
const (
	Major = 5
	Minor = 3
)

// DefaultOrigin names the CI system in every id when --origin does not.
const DefaultOrigin = "xmitcheck"

// Root is the first element of every test's path.
const Root = "xmitcheck"

// The statuses of the schema's "status" ($defs/status), highest priority
// first.
const (
	Fail  = "FAIL"
	Error = "ERROR"
	Miss  = "MISS"
	Pass  = "PASS"
	Done  = "DONE"
	Skip  = "SKIP"
)

// maxExcerpt is the schema's maxLength of log_excerpt, in characters.
const maxExcerpt = 16384

// originRE is the schema's pattern of an origin (and of an id's prefix).
var originRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// Report is a KCIDB report: the schema's top-level object.
type Report struct {
	Version   Version    `json:"version"`
	Checkouts []Checkout `json:"checkouts,omitempty"`
	Builds    []Build    `json:"builds,omitempty"`
	Tests     []Test     `json:"tests,omitempty"`
}

// Version is the schema version the report follows.
type Version struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

// Checkout is the kernel's source: the schema has no other place for a
// Debian package or a kernel given as a path, so its comment and misc say
// what the results know of it.
type Checkout struct {
	ID       string         `json:"id"`
	Origin   string         `json:"origin"`
	TreeName string         `json:"tree_name,omitempty"`
	Comment  string         `json:"comment,omitempty"`
	Valid    bool           `json:"valid"`
	Misc     map[string]any `json:"misc,omitempty"`
}

// Build is the kernel as it was booted.
type Build struct {
	ID           string         `json:"id"`
	CheckoutID   string         `json:"checkout_id"`
	Origin       string         `json:"origin"`
	Comment      string         `json:"comment,omitempty"`
	Architecture string         `json:"architecture,omitempty"`
	ConfigName   string         `json:"config_name,omitempty"`
	Status       string         `json:"status"`
	Misc         map[string]any `json:"misc,omitempty"`
}

// Test is one verdict, feature miss or test on one build.
type Test struct {
	ID          string         `json:"id"`
	BuildID     string         `json:"build_id"`
	Origin      string         `json:"origin"`
	Path        string         `json:"path"`
	Status      string         `json:"status"`
	Comment     string         `json:"comment,omitempty"`
	Duration    *float64       `json:"duration,omitempty"`
	LogExcerpt  string         `json:"log_excerpt,omitempty"`
	Environment *Environment   `json:"environment,omitempty"`
	Misc        map[string]any `json:"misc,omitempty"`
}

// Environment is where a test ran: the comment says it in words, misc
// as fields (vm, accel).
type Environment struct {
	Comment string         `json:"comment,omitempty"`
	Misc    map[string]any `json:"misc,omitempty"`
}

// Write writes the snapshots as one KCIDB report, indented.
func Write(w io.Writer, snaps []results.Snapshot, origin string) error {
	r, err := New(snaps, origin)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// New builds the report of the snapshots. A build's id is the origin, the
// kernel's name (a path's / made _, for URLs) and a hash of what the
// snapshot holds (fingerprint): the same folder gives the same ids however
// often it is reported (submitting twice replaces, never duplicates), and
// another run gives others.
func New(snaps []results.Snapshot, origin string) (*Report, error) {
	if err := CheckOrigin(origin); err != nil {
		return nil, err
	}
	r := &Report{Version: Version{Major, Minor}}
	seeds, tests := everything(snaps)
	for _, s := range snaps {
		name := cmp.Or(s.Name, s.Kernel)
		id := origin + ":" + notInID.ReplaceAllString(name, "_") + ":" + fingerprint(s)
		r.Checkouts = append(r.Checkouts, checkout(s, id, origin))
		r.Builds = append(r.Builds, build(s, id, origin))
		r.Tests = append(r.Tests, kernelTests(s, id, origin, seeds, tests)...)
	}
	return r, nil
}

// CheckOrigin says what is wrong with an origin KCIDB would refuse.
func CheckOrigin(origin string) error {
	if !originRE.MatchString(origin) {
		return fmt.Errorf("origin %q: KCIDB wants lower-case letters, digits and _ only", origin)
	}
	return nil
}

// checkout is the snapshot's kernel source. A Debian package is its own
// tree ("debian"); a build or a path records no tree or commit in the
// results.
func checkout(s results.Snapshot, id, origin string) Checkout {
	c := Checkout{ID: id, Origin: origin, Comment: s.Kernel, Valid: true, Misc: map[string]any{}}
	pkg, version, _ := strings.Cut(s.Package, " ")
	if pkg != "" {
		c.TreeName = "debian"
		c.Misc["package"] = pkg
		c.Misc["package_version"] = version
	}
	put(c.Misc, "kernel", s.Name)
	put(c.Misc, "release", s.Release)
	return c
}

// build is the kernel that was booted. xmitcheck boots x86_64 kernels only;
// a Debian kernel's configuration is its package's.
func build(s results.Snapshot, id, origin string) Build {
	b := Build{ID: id, CheckoutID: id, Origin: origin, Comment: s.Kernel, Architecture: "x86_64", Status: Pass,
		Misc: map[string]any{}}
	b.ConfigName, _, _ = strings.Cut(s.Package, " ")
	put(b.Misc, "release", s.Release)
	put(b.Misc, "accel", s.Accel)
	put(b.Misc, "expect_source", s.ExpectSource)
	if s.BootToFirstTest > 0 {
		b.Misc["boot_to_first_test"] = s.BootToFirstTest.Seconds()
	}
	if s.Total > 0 {
		b.Misc["total"] = s.Total.Seconds()
	}
	if len(s.Notes) > 0 {
		b.Misc["notes"] = s.Notes
	}
	return b
}

// kernelTests are the build's tests: the seeds' verdicts, the feature
// misses, the run's own error, the tests, and MISS for each seed and test
// another kernel of the report has and this one's unfinished run lacks.
func kernelTests(s results.Snapshot, build, origin string, seeds []feature.Seed, tests []testKey) []Test {
	var env *Environment
	if s.Accel != "" {
		env = environment(s.Accel)
	}
	// A test's id is the build's and the test's path, which holds no / to
	// trouble a URL; the second test of a build on one path (two names
	// that differ only where the path has _) gets ~2, and so on.
	used := map[string]int{}
	newTest := func(path, status string) Test {
		id := build + ":" + strings.TrimPrefix(path, Root+".")
		if used[path]++; used[path] > 1 {
			id += "~" + strconv.Itoa(used[path])
		}
		return Test{ID: id, BuildID: build, Origin: origin, Path: path, Status: status, Environment: env}
	}
	var out []Test
	judged := map[feature.Seed]bool{}
	for _, v := range s.Verdicts {
		judged[v.Seed] = true
		t := newTest(Root+"."+element(string(v.Seed)), verdictStatus(v))
		t.Comment, t.LogExcerpt = v.Line(), excerpt(v.Why)
		t.Misc = map[string]any{"verdict": string(v.State)}
		put(t.Misc, "want", string(v.Want))
		out = append(out, t)
	}
	for _, m := range s.Misses {
		t := newTest(Root+".feature."+element(string(m.Feature)), Fail)
		t.Comment, t.LogExcerpt = m.Line(), m.Line()
		t.Misc = map[string]any{"feature": string(m.Feature), "expected": !m.Present}
		put(t.Misc, "probe", m.Probe)
		put(t.Misc, "test", m.Test)
		out = append(out, t)
	}
	for _, c := range s.Costs {
		seed, row, _ := strings.Cut(c.ID(), "/")
		t := newTest(Root+".cost."+element(seed)+"."+element(row), costStatus(c.Judgment))
		t.Comment = c.Line()
		m := c.JudgedMeasure()
		t.Misc = map[string]any{"judgment": string(c.Judgment), "method": c.Method, "unit": m.Unit,
			"claim_pct": m.Claim, "says": c.Says}
		if m.Err == "" {
			t.Misc["change_pct"], t.Misc["ci95_pct"] = m.Change.Pct, []float64{m.Change.Lo, m.Change.Hi}
			t.Misc["aa_floor_pct"], t.Misc["rounds"] = m.Floor(), m.Change.Rounds
		}
		out = append(out, t)
	}
	if s.Err != "" {
		t := newTest(Root+".run", Error)
		t.Comment, t.LogExcerpt = "the run could not finish", excerpt(s.Err)
		out = append(out, t)
	}
	ran := map[testKey]bool{}
	for _, st := range s.Tests {
		k := testKey{st.Package, st.Name}
		ran[k] = true
		t := newTest(testPath(k), testStatus(st.Status))
		secs := st.Elapsed.Seconds()
		t.Duration, t.LogExcerpt = &secs, excerpt(st.Why)
		t.Misc = map[string]any{"status": string(st.Status)}
		out = append(out, t)
	}
	if s.Err != "" {
		out = append(out, missing(newTest, seeds, judged, tests, ran)...)
	}
	return out
}

// missing is MISS for each seed and test of the report that an unfinished
// run did not judge or run.
func missing(newTest func(path, status string) Test, seeds []feature.Seed, judged map[feature.Seed]bool,
	tests []testKey, ran map[testKey]bool,
) []Test {
	var out []Test
	for _, seed := range seeds {
		if !judged[seed] {
			t := newTest(Root+"."+element(string(seed)), Miss)
			t.Comment = string(seed) + ": not judged: the run could not finish"
			out = append(out, t)
		}
	}
	for _, k := range tests {
		if !ran[k] {
			t := newTest(testPath(k), Miss)
			t.Comment = k.String() + ": did not run: the run could not finish"
			out = append(out, t)
		}
	}
	return out
}

// verdictStatus is a verdict's status: PASS where it is what the
// expectation wants, FAIL where it differs (BROKEN always does), ERROR
// where the seed could not be tested, and DONE where no expectation judges
// the seed (the behaviour was seen, nothing says which is right).
func verdictStatus(v results.Verdict) string {
	switch {
	case v.State == results.Error:
		return Error
	case v.Mismatch():
		return Fail
	case v.Want == "":
		return Done
	}
	return Pass
}

// costStatus is a cost row's status: PASS within its claim, FAIL where it
// REGRESSED, DONE where it is noisy (measured, not judged) and ERROR where
// no measure could be made.
func costStatus(j cost.Judgment) string {
	switch j {
	case cost.Within:
		return Pass
	case cost.Regressed:
		return Fail
	case cost.Noisy:
		return Done
	}
	return Error
}

// testStatus is a test's status. An expected failure (XFAIL: a known
// kernel issue, or a seed's absence where it is expected) is a SKIP, as in
// the go test -json, JUnit and KTAP outputs; misc keeps "xfail".
func testStatus(s results.Status) string {
	switch s {
	case results.Pass:
		return Pass
	case results.Fail:
		return Fail
	case results.Skip, results.XFail:
		return Skip
	}
	return Error
}

// environment says how the tests ran: on the running kernel (accelerator
// "none", or "host") or in a qemu guest under KVM or TCG.
func environment(accel string) *Environment {
	vm := !results.NoVM(accel) && accel != "host"
	env := &Environment{Misc: map[string]any{"vm": vm}}
	switch {
	case !vm:
		env.Comment = "the running kernel, no VM"
	case accel == "kvm":
		env.Comment, env.Misc["accel"] = "a qemu guest under KVM (hardware virtualization)", accel
	case accel == "tcg":
		env.Comment, env.Misc["accel"] = "a qemu guest under TCG (qemu's CPU emulator, no KVM)", accel
	default:
		env.Comment, env.Misc["accel"] = "a qemu guest, accelerator "+accel, accel
	}
	return env
}

// testKey is a leaf test: its package as the snapshot has it
// ("suites/tun") and its go test name.
type testKey struct{ pkg, name string }

func (k testKey) String() string { return k.pkg + "." + k.name }

// testPath is the test's path: Root, the suite ("tun" for suites/tun, the
// package's elements otherwise), then the test and its subtests, one
// element each. The schema allows letters, digits, _ and - in an element:
// anything else becomes _, so two names can share a path (their ids
// differ).
func testPath(k testKey) string {
	pkg := strings.TrimPrefix(k.pkg, "suites/")
	var els []string
	for _, e := range strings.Split(pkg, "/") {
		els = append(els, element(e))
	}
	for _, e := range strings.Split(k.name, "/") {
		els = append(els, element(e))
	}
	return Root + "." + strings.Join(els, ".")
}

var notInID = regexp.MustCompile(`[^A-Za-z0-9._:+~-]`)

var notInElement = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// element is s as one element of a path.
func element(s string) string { return PathElement(s) }

// PathElement is s as one element of a KCIDB test path: letters, digits,
// _ and -, anything else _ ("flag=off" is "flag_off"). A lab's test case
// names (the LAVA test definition's) are made the same way.
func PathElement(s string) string {
	if s == "" {
		return "_"
	}
	return notInElement.ReplaceAllString(s, "_")
}

// excerpt is s cut to the schema's log_excerpt limit, keeping the end
// (where a failure's transcript says what failed and any kernel report).
func excerpt(s string) string {
	if utf8.RuneCountInString(s) <= maxExcerpt {
		return s
	}
	const mark = "…\n"
	r := []rune(s)
	return mark + string(r[len(r)-maxExcerpt+utf8.RuneCountInString(mark):])
}

// everything lists the seeds and the tests of all snapshots, in the order
// they first appear.
func everything(snaps []results.Snapshot) ([]feature.Seed, []testKey) {
	var seeds []feature.Seed
	var tests []testKey
	seenSeed, seenTest := map[feature.Seed]bool{}, map[testKey]bool{}
	for _, s := range snaps {
		for _, v := range s.Verdicts {
			if !seenSeed[v.Seed] {
				seenSeed[v.Seed] = true
				seeds = append(seeds, v.Seed)
			}
		}
		for _, t := range s.Tests {
			k := testKey{t.Package, t.Name}
			if !seenTest[k] {
				seenTest[k] = true
				tests = append(tests, k)
			}
		}
	}
	return seeds, tests
}

// fingerprint identifies one kernel's run by what its snapshot holds: the
// kernel, the timings (to the nanosecond, so two runs differ), the
// verdicts and the tests. It names the fields it reads, so a field added
// to results.json later does not change the ids of a folder written before.
func fingerprint(s results.Snapshot) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q %q %d %d %q\n", s.Kernel, s.Name, s.Release, s.Package, s.Accel,
		s.BootToFirstTest, s.Total, s.Err)
	for _, v := range s.Verdicts {
		fmt.Fprintf(h, "verdict %q %q %q\n", v.Seed, v.State, v.Want)
	}
	for _, t := range s.Tests {
		fmt.Fprintf(h, "test %q %q %q %d\n", t.Package, t.Name, t.Status, t.Elapsed)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// put sets m[k] when v is not empty.
func put(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}
