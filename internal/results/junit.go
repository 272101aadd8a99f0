package results

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    float64       `xml:"time,attr"`
	Failure *junitMessage `xml:"failure,omitempty"`
	Skipped *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes runs as JUnit XML: a testsuite per kernel and package,
// a testcase per test.
func WriteJUnit(w io.Writer, runs []*Run) error {
	var out junitSuites
	for _, r := range runs {
		for _, p := range r.tree() {
			s := junitSuite{Name: r.Kernel + " " + p.name}
			p.leaves(p.name, "", func(class, name string, n *node) {
				c := junitCase{Class: class, Name: name}
				if n.test != nil {
					c.Time = n.test.Elapsed.Seconds()
				}
				switch n.status() {
				case Fail:
					s.Failures++
					body := []string{}
					if n.test != nil {
						body = append(append(body, n.test.Output...), n.test.Kernel...)
					}
					c.Failure = &junitMessage{Message: "failed", Body: strings.Join(body, "\n")}
				case Skip, XFail:
					s.Skipped++
					msg := "XFAIL: expected failures in subtests"
					if n.test != nil {
						msg = n.test.Reason()
					}
					c.Skipped = &junitMessage{Message: msg}
				}
				s.Tests++
				s.Cases = append(s.Cases, c)
			})
			out.Suites = append(out.Suites, s)
		}
		if len(r.Verdicts) > 0 || len(r.Misses) > 0 {
			s := junitSuite{Name: r.Kernel + " " + VerdictPackage}
			for _, v := range r.Verdicts {
				c := junitCase{Class: VerdictPackage, Name: string(v.Seed)}
				if v.Mismatch() {
					s.Failures++
					c.Failure = &junitMessage{Message: fmt.Sprintf("%s, want %s", v.State, v.Want), Body: v.Why}
				}
				s.Tests++
				s.Cases = append(s.Cases, c)
			}
			for _, m := range r.Misses {
				s.Tests++
				s.Failures++
				s.Cases = append(s.Cases, junitCase{Class: VerdictPackage, Name: "feature " + string(m.Feature),
					Failure: &junitMessage{Message: "missing, expected present", Body: m.Test + ": " + m.Probe}})
			}
			out.Suites = append(out.Suites, s)
		}
		if r.Err != nil {
			out.Suites = append(out.Suites, junitSuite{Name: r.Kernel, Tests: 1, Failures: 1, Cases: []junitCase{{
				Class: r.Kernel, Name: "run", Failure: &junitMessage{Message: r.Err.Error()},
			}}})
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
	_, err := io.WriteString(w, "\n")
	return err
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
