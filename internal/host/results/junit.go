package results

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The JUnit writer follows what Jenkins (junit-10.xsd) and the strict Ant
// schema (JUnit.xsd) both accept: a testsuite per kernel and package with
// package, id, tests, failures, errors, skipped, time, timestamp (no
// zone) and hostname; properties first, then the testcases, system-out and
// system-err; a testcase's failure, error and skipped carry a type.

// junitSuites has no attributes: the Ant schema allows none.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Package    string          `xml:"package,attr"`
	ID         int             `xml:"id,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out"`
	SystemErr  string          `xml:"system-err"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitMessage `xml:"failure,omitempty"`
	Error   *junitMessage `xml:"error,omitempty"`
	Skipped *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// Types of a testcase's outcome: what failed it, or why it did not run.
const (
	junitAssertion = "assertion" // the test's own check failed
	junitKernel    = "kernel"    // a splat, crash or hang under the test
	junitCancelled = "cancelled" // the run was stopped before the test ended
	junitEmulator  = "emulator"  // the emulator failed it: not tested
	junitRun       = "run"       // the run itself (boot, infrastructure)
	junitVerdict   = "verdict"   // a seed's verdict differs from its expectation
	junitSkip      = "skip"
	junitXFail     = "xfail"
)

// WriteJUnit writes runs as JUnit XML: a testsuite per kernel and package,
// a testcase per leaf test, classname "KERNEL/suites/tun" as the package
// is in JSON, so that files of several kernels never merge their cases;
// then a testsuite "KERNEL/verdicts" with a case per seed and per missing
// feature, and the run's own error as an error case.
func WriteJUnit(w io.Writer, runs []*Run) error {
	machine, err := os.Hostname()
	if err != nil || machine == "" {
		machine = "localhost"
	}
	var out junitSuites
	for _, r := range runs {
		props := []junitProperty{
			{"kernel", r.Kernel}, {"accel", r.Accel}, {"expectation", r.ExpectSource}, {"runner", machine},
		}
		if r.Round > 0 {
			props = append(props, junitProperty{"round", strconv.Itoa(r.Round)})
		}
		host := junitHost(r, machine)
		for _, p := range r.tree() {
			s := junitPackage(r, p)
			s.Properties, s.Hostname = props, host
			out.add(s)
		}
		s := junitVerdicts(r)
		s.Properties, s.Hostname = append(slices.Clone(props), s.Properties...), host
		out.add(s)
		if len(r.Costs) > 0 {
			s := junitCosts(r)
			s.Properties, s.Hostname = append(slices.Clone(props), s.Properties...), host
			out.add(s)
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

// junitHost is where r's tests ran: this machine (the runner) for the
// host's own kernel, else the VM, named by its kernel.
func junitHost(r *Run, machine string) string {
	if r.Accel == "none" || r.Name == "host" {
		return machine
	}
	return label(r)
}

func (o *junitSuites) add(s junitSuite) {
	s.ID = len(o.Suites)
	o.Suites = append(o.Suites, s)
}

// junitPackage is one package's testsuite.
func junitPackage(r *Run, p *node) junitSuite {
	class := label(r) + "/" + p.name
	s := junitSuite{Name: class, Package: class}
	start, end := r.Ended, r.Ended
	if t := p.first(); t != nil {
		start = t.Started
	}
	if p.test != nil {
		// The binary's own PASS or FAIL is not the judged one (a skip
		// the judge fails leaves a binary that passed): the cases say.
		s.SystemOut = strings.Join(slices.DeleteFunc(withoutProtocol(p.test.Output), isSummaryLine), "\n")
		if !p.test.Ended.IsZero() {
			end = p.test.Ended
		}
	}
	s.Time, s.Timestamp = seconds(end.Sub(start)), timestamp(start)
	p.leaves(class, "", func(class, name string, n *node) {
		c := junitCase{Class: class, Name: name, Time: "0"}
		var t Test
		if n.test != nil {
			t = *n.test
			c.Time = seconds(t.Elapsed)
		}
		body, message := t.transcript(), t.firstFailure()
		if t.Judged != "" {
			body, message = t.judgedTranscript(), t.Judged
		}
		switch st := n.status(); {
		case st == Fail && t.Artefact:
			s.Errors++
			c.Error = &junitMessage{
				Type: junitEmulator, Message: "not tested: the emulator failed it, not the kernel", Body: body,
			}
		case st == Fail && t.Cancelled:
			s.Errors++
			c.Error = &junitMessage{Type: junitCancelled, Message: "not tested: the run was cancelled", Body: body}
		case st == Fail:
			s.Failures++
			typ := junitAssertion
			if len(t.Kernel) > 0 {
				typ = junitKernel
			}
			c.Failure = &junitMessage{Type: typ, Message: message, Body: body}
		case st == XFail:
			s.Skipped++
			c.Skipped = &junitMessage{Type: junitXFail, Message: t.Reason()}
		case st == Skip:
			s.Skipped++
			c.Skipped = &junitMessage{Type: junitSkip, Message: t.Reason()}
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	})
	if p.test != nil && p.test.Status == Fail && !p.anyFailed() {
		// The binary failed outside its tests (a splat between tests, a
		// leak found after them): one case says so.
		s.Tests++
		s.Failures++
		s.Cases = append(s.Cases, junitCase{Class: class, Name: "(test binary)", Time: "0",
			Failure: &junitMessage{Type: junitKernel, Message: p.test.firstFailure(), Body: p.test.transcript()}})
	}
	return s
}

// junitVerdicts is the run's verdicts as a testsuite. A case passes or
// fails; every verdict's state and why, passing or not, are a property
// named after its seed and a line of the suite's system-out (a testcase
// holds no text where it passed, in the Ant schema).
func junitVerdicts(r *Run) junitSuite {
	class := label(r) + "/" + VerdictPackage
	s := junitSuite{Name: class, Package: class, Time: "0", Timestamp: timestamp(r.Ended)}
	var out []string
	for _, v := range r.Verdicts {
		c := junitCase{Class: class, Name: string(v.Seed), Time: "0"}
		if v.Mismatch() {
			s.Failures++
			c.Failure = &junitMessage{Type: junitVerdict, Message: v.Line(), Body: v.Why}
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
		s.Properties = append(s.Properties,
			junitProperty{"verdict." + string(v.Seed), strings.TrimPrefix(v.Line(), string(v.Seed)+": ")})
		out = append(out, v.Line())
	}
	for _, m := range r.Misses {
		out = append(out, m.Line())
	}
	s.SystemOut = strings.Join(append(out, r.notes()...), "\n")
	for _, m := range r.Misses {
		s.Tests++
		s.Failures++
		s.Cases = append(s.Cases, junitCase{Class: class, Name: string(m.Feature), Time: "0",
			Failure: &junitMessage{Type: junitVerdict, Message: m.Line()}})
	}
	if r.Err != nil {
		s.Tests++
		s.Errors++
		s.Cases = append(s.Cases, junitCase{Class: class, Name: "run", Time: "0",
			Error: &junitMessage{Type: junitRun, Message: strings.ReplaceAll(r.Err.Error(), "\n", "; ")}})
	}
	return s
}

// anyFailed reports whether a test below n failed.
func (n *node) anyFailed() bool {
	for _, c := range n.children {
		if c.status() == Fail {
			return true
		}
	}
	return false
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// timestamp is t as the Ant schema wants it: UTC, no zone, to the second.
func timestamp(t time.Time) string {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Format("2006-01-02T15:04:05")
}

// leaves calls fn for every node without children below n, with its full
// test name.
func (n *node) leaves(class, prefix string, fn func(class, name string, n *node)) {
	for _, c := range n.children {
		name := c.name
		if prefix != "" {
			name = prefix + "/" + c.name
		}
		if len(c.children) == 0 {
			fn(class, name, c)
			continue
		}
		c.leaves(class, name, fn)
	}
}
