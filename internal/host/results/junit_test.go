package results

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// element is a parsed XML element.
type element struct {
	name     string
	attrs    map[string]string
	children []*element
}

func parseXML(t *testing.T, data []byte) *element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	var stack []*element
	var root *element
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		assert.NilError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(stack) == 0 {
				root = e
			} else {
				p := stack[len(stack)-1]
				p.children = append(p.children, e)
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	return root
}

// attrs checks e's attributes: every required one there and matching its
// pattern, none outside allowed.
func attrs(e *element, required, optional map[string]*regexp.Regexp) error {
	var errs []error
	for name, re := range required {
		if v, ok := e.attrs[name]; !ok {
			errs = append(errs, fmt.Errorf("<%s> lacks %s", e.name, name))
		} else if re != nil && !re.MatchString(v) {
			errs = append(errs, fmt.Errorf("<%s %s=%q> does not match %s", e.name, name, v, re))
		}
	}
	for name, v := range e.attrs {
		re, ok := optional[name]
		if _, req := required[name]; !ok && !req {
			errs = append(errs, fmt.Errorf("<%s> has %s, which the schema does not allow", e.name, name))
		} else if ok && re != nil && !re.MatchString(v) {
			errs = append(errs, fmt.Errorf("<%s %s=%q> does not match %s", e.name, name, v, re))
		}
	}
	return errors.Join(errs...)
}

var (
	anyValue  *regexp.Regexp
	intRE     = regexp.MustCompile(`^-?[0-9]+$`)
	decimalRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]*)?$`)
	tokenRE   = regexp.MustCompile(`^\S+( \S+)*$`)
	// surefireRE is junit-10.xsd's SUREFIRE_TIME.
	surefireRE = regexp.MustCompile(`^((([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?)$`)
	// antTimeRE is the Ant schema's ISO8601_DATETIME_PATTERN: no zone.
	antTimeRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`)
)

// checkJenkins holds a document to the rules of Jenkins' junit-10.xsd
// (xunit plugin): which attributes each element takes and which children.
func checkJenkins(root *element) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if root.name != "testsuites" {
		return fmt.Errorf("root <%s>, want <testsuites>", root.name)
	}
	add(attrs(root, nil, map[string]*regexp.Regexp{
		"name": anyValue, "time": surefireRE, "tests": anyValue, "failures": anyValue, "errors": anyValue,
	}))
	for _, s := range root.children {
		if s.name != "testsuite" {
			add(fmt.Errorf("<testsuites> holds <%s>", s.name))
			continue
		}
		add(attrs(s, map[string]*regexp.Regexp{"name": anyValue, "tests": anyValue, "failures": anyValue, "errors": anyValue},
			map[string]*regexp.Regexp{
				"group": anyValue, "time": surefireRE, "skipped": anyValue, "timestamp": anyValue, "hostname": anyValue,
				"id": anyValue, "package": anyValue, "file": anyValue, "log": anyValue, "url": anyValue,
			}))
		for _, c := range s.children {
			switch c.name {
			case "properties":
				for _, p := range c.children {
					add(attrs(p, map[string]*regexp.Regexp{"name": anyValue, "value": anyValue}, nil))
				}
			case "system-out", "system-err":
			case "testcase":
				add(attrs(c, map[string]*regexp.Regexp{"name": anyValue},
					map[string]*regexp.Regexp{"time": anyValue, "classname": anyValue, "group": anyValue}))
				for _, o := range c.children {
					if !slices.Contains([]string{"skipped", "error", "failure", "system-out", "system-err"}, o.name) {
						add(fmt.Errorf("<testcase> holds <%s>", o.name))
						continue
					}
					if o.name != "system-out" && o.name != "system-err" {
						add(attrs(o, nil, map[string]*regexp.Regexp{"type": anyValue, "message": anyValue}))
					}
				}
			default:
				add(fmt.Errorf("<testsuite> holds <%s>", c.name))
			}
		}
	}
	return errors.Join(errs...)
}

// checkAnt holds a document to the strict Ant schema (windyroad's
// JUnit.xsd): <testsuites> without attributes, each testsuite with package
// and id, a zoneless timestamp, a hostname, and its children in order:
// properties, testcases, system-out, system-err; a testcase with name,
// classname and time and at most one of skipped, error and failure, the
// last two with a type.
func checkAnt(root *element) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	add(attrs(root, nil, nil))
	for i, s := range root.children {
		add(attrs(s, map[string]*regexp.Regexp{"name": tokenRE, "timestamp": antTimeRE, "hostname": tokenRE, "tests": intRE,
			"failures": intRE, "errors": intRE, "time": decimalRE, "package": tokenRE, "id": intRE},
			map[string]*regexp.Regexp{"skipped": intRE}))
		if s.attrs["id"] != strconv.Itoa(i) {
			add(fmt.Errorf("testsuite %d has id %q", i, s.attrs["id"]))
		}
		var order []string
		for _, c := range s.children {
			if len(order) == 0 || order[len(order)-1] != c.name {
				order = append(order, c.name)
			}
		}
		want := []string{"properties", "testcase", "system-out", "system-err"}
		if !slices.Contains(order, "testcase") {
			want = slices.Delete(want, 1, 2)
		}
		if !slices.Equal(order, want) {
			add(fmt.Errorf("testsuite %q holds %v, want %v in that order", s.attrs["name"], order, want))
		}
		for _, c := range s.children {
			if c.name != "testcase" {
				continue
			}
			add(attrs(c, map[string]*regexp.Regexp{"name": tokenRE, "classname": tokenRE, "time": decimalRE}, nil))
			if len(c.children) > 1 {
				add(fmt.Errorf("testcase %q holds %d outcomes, at most 1", c.attrs["name"], len(c.children)))
			}
			for _, o := range c.children {
				switch o.name {
				case "skipped":
				case "error", "failure":
					add(attrs(o, map[string]*regexp.Regexp{"type": anyValue}, map[string]*regexp.Regexp{"message": anyValue}))
				default:
					add(fmt.Errorf("testcase %q holds <%s>", c.attrs["name"], o.name))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// junitSample is two kernels: sample() and one whose run failed with an
// emulator artefact and a verdict that differs.
func junitSample() []*Run {
	r := NewRun("build:x (7.3.4)")
	r.Name = "build:x"
	r.Add(Event{Action: "run", Package: pkg, Test: "TestA"})
	r.Add(Event{
		Action: "output", Package: pkg, Test: "TestA",
		Output: "    a_test.go:1: " + feature.Record{Seed: feature.Seed000Tun}.String() + "\n",
	})
	r.AttachKernel(pkg, "panic", []string{"Oops: int3: 0000 [#1]"})
	r.MarkArtefact(pkg)
	r.Finish(errors.New("suites/tun could not be tested: TCG ran stale code twice"))
	e, _ := expect.Parse("000-tun,fq_codel")
	r.Judge(e, "--expect 000-tun", feature.Seed000Tun)
	return []*Run{sample(), r}
}

func TestJUnitSchemas(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, WriteJUnit(&b, junitSample()))
	root := parseXML(t, b.Bytes())
	assert.Check(t, checkJenkins(root))
	assert.Check(t, checkAnt(root))
}

func TestJUnit(t *testing.T) {
	var b bytes.Buffer
	assert.NilError(t, WriteJUnit(&b, junitSample()))
	var got junitSuites
	assert.NilError(t, xml.Unmarshal(b.Bytes(), &got))
	assert.Assert(t, is.Len(got.Suites, 4))
	s := got.Suites[0]
	assert.Check(t, is.Equal(s.Name, "debian:7.3 (7.3.4-1)/suites/tun"))
	assert.Check(t, is.Equal(s.Tests, 6))
	assert.Check(t, is.Equal(s.Failures, 2))
	assert.Check(t, is.Equal(s.Skipped, 2))
	assert.Check(t, is.Equal(s.Cases[3].Name, "TestWake/Half"))
	assert.Check(t, is.Equal(s.Cases[3].Class, "debian:7.3 (7.3.4-1)/suites/tun"), "the kernel is in the classname")
	xfail := s.Cases[2]
	assert.Check(t, is.Equal(xfail.Skipped.Type, junitXFail))
	assert.Check(t, is.Equal(s.Cases[5].Failure.Type, junitKernel), "a splat under the test")

	x := got.Suites[2]
	assert.Check(t, is.Equal(x.Name, "build:x/suites/tun"))
	assert.Check(t, is.Equal(x.Errors, 1), "the emulator's failure is an error, not a failure")
	assert.Check(t, is.Equal(x.Cases[0].Error.Type, junitEmulator))
	v := got.Suites[3]
	assert.Check(t, is.Equal(v.Name, "build:x/verdicts"))
	assert.Check(t, is.Equal(v.Cases[len(v.Cases)-1].Error.Type, junitRun), "the run's error is an error case")
}

// TestJUnitSchemaRules: the checks reject what each schema rejects.
func TestJUnitSchemaRules(t *testing.T) {
	// doc is one testsuite that both schemas take but for what a case
	// changes: its counts, its timestamp and its test cases.
	doc := func(counts, timestamp, cases string) string {
		return `<testsuites><testsuite name="a" package="a" id="0" ` + counts + ` errors="0" time="0"` +
			` timestamp="` + timestamp + `" hostname="h"><properties></properties>` + cases +
			`<system-out></system-out><system-err></system-err></testsuite></testsuites>`
	}
	for _, tc := range []struct{ name, doc, err string }{
		{"testsuites with attributes", `<testsuites tests="1"></testsuites>`, "<testsuites> has tests"},
		{"no classname", doc(`tests="1" failures="0"`, "2026-12-01T10:00:00",
			`<testcase name="T" time="0"></testcase>`), "<testcase> lacks classname"},
		{"a zone in the timestamp", doc(`tests="0" failures="0"`, "2026-12-01T10:00:00Z", ""), "timestamp"},
		{"failure without type", doc(`tests="1" failures="1"`, "2026-12-01T10:00:00",
			`<testcase name="T" classname="c" time="0"><failure message="m"></failure></testcase>`), "<failure> lacks type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorContains(t, checkAnt(parseXML(t, []byte(tc.doc))), tc.err)
		})
	}
	noErrors := `<testsuites><testsuite name="a" tests="0" failures="0"></testsuite></testsuites>`
	assert.ErrorContains(t, checkJenkins(parseXML(t, []byte(noErrors))), "<testsuite> lacks errors")
}

// junitOf writes runs as JUnit and reads it back.
func junitOf(t *testing.T, runs []*Run) junitSuites {
	t.Helper()
	var b bytes.Buffer
	assert.NilError(t, WriteJUnit(&b, runs))
	root := parseXML(t, b.Bytes())
	assert.Check(t, checkJenkins(root))
	assert.Check(t, checkAnt(root))
	var got junitSuites
	assert.NilError(t, xml.Unmarshal(b.Bytes(), &got))
	return got
}

func suiteNamed(t *testing.T, doc junitSuites, name string) junitSuite {
	t.Helper()
	i := slices.IndexFunc(doc.Suites, func(s junitSuite) bool { return s.Name == name })
	assert.Assert(t, i >= 0, "no testsuite %q", name)
	return doc.Suites[i]
}

// TestJUnitJudged replays the recorded run with 004 expected on 5.10: its
// devmap tests skipped on the seed's absence and the judge failed them.
func TestJUnitJudged(t *testing.T) {
	runs := recorded(t, "!000 !002 004", expect73)
	doc := junitOf(t, runs)
	devmap := suiteNamed(t, doc, "debian:5.10/suites/devmap")
	assert.Assert(t, devmap.Failures > 0)
	// The binary's own PASS is not the package's verdict.
	assert.Check(t, !slices.Contains(strings.Split(devmap.SystemOut, "\n"), "PASS"), devmap.SystemOut)
	for _, c := range devmap.Cases {
		if c.Failure == nil {
			continue
		}
		// A failure ends on the judge's word, not the test's own skip.
		assert.Check(t, !strings.Contains(c.Failure.Body, "--- SKIP"), "%s: %s", c.Name, c.Failure.Body)
		assert.Check(t, strings.HasPrefix(c.Failure.Message, "seed 004 absent: devmap program ran at enqueue time"),
			c.Failure.Message)
		assert.Check(t, strings.HasSuffix(c.Failure.Body, "\nxmitcheck: "+c.Failure.Message), c.Failure.Body)
	}

	// A passing verdict says what it is and why: a property named after its
	// seed and a line of the suite's output.
	verdicts := suiteNamed(t, doc, "debian:7.3/verdicts")
	c := verdicts.Cases[slices.IndexFunc(verdicts.Cases, func(c junitCase) bool { return c.Name == "004" })]
	assert.Check(t, c.Failure == nil)
	why := "present (want present): passed: 18 tests; shown by suites/devmap.TestOrdering/LiveFrames/OneDest/Batch64"
	i := slices.IndexFunc(verdicts.Properties, func(p junitProperty) bool { return p.Name == "verdict.004" })
	assert.Assert(t, i >= 0, "%v", verdicts.Properties)
	assert.Check(t, strings.HasPrefix(verdicts.Properties[i].Value, why), verdicts.Properties[i].Value)
	assert.Check(t, is.Contains(verdicts.SystemOut, "004: "+why))
	assert.Check(t, !strings.Contains(verdicts.SystemOut, "PASS"))
}

// TestJUnitHostname: a suite's hostname is where its tests ran: the
// machine itself for the host's kernel, else the VM, named by its kernel;
// the machine that ran the VM is the property "runner".
func TestJUnitHostname(t *testing.T) {
	machine, err := os.Hostname()
	assert.NilError(t, err)
	host := NewRun("host (6.18.44)")
	host.Name, host.Accel = "host", "none"
	host.Add(Event{Action: "run", Package: pkg, Test: "TestA"})
	host.Add(Event{Action: "pass", Package: pkg, Test: "TestA"})
	host.Finish(nil)
	vm := recorded(t, expect510, expect73)[1]
	vm.Accel = "tcg"
	doc := junitOf(t, []*Run{host, vm})
	for _, s := range doc.Suites {
		want := "debian:7.3"
		if strings.HasPrefix(s.Name, "host/") {
			want = machine
		}
		assert.Check(t, is.Equal(s.Hostname, want), s.Name)
		assert.Check(t, slices.Contains(s.Properties, junitProperty{"runner", machine}), s.Name)
	}
}

// TestSnapshotJudged: the report's text of a test the judge failed ends on
// the judge's word, not on the test's own "--- SKIP".
func TestSnapshotJudged(t *testing.T) {
	runs := recorded(t, "!000 !002 004", expect73)
	n := 0
	for _, s := range runs[0].Snapshot().Tests {
		if s.Status != Fail {
			continue
		}
		n++
		assert.Check(t, !strings.Contains(s.Why, "--- SKIP"), "%s: %s", s.Name, s.Why)
		assert.Check(t, is.Contains(s.Why, "\nxmitcheck: seed 004 absent: "))
	}
	assert.Check(t, n > 0)
}
