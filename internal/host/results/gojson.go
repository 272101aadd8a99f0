package results

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// WriteJSON writes judged runs as one `go test -json` stream, the shape
// gotestsum, tparse and go-junit-report read: per kernel and package a
// "start", each test's "run", its output and its end (the judged status:
// an XFAIL is a skip that says so), the package's "ok"/"FAIL" line and
// end; then the package "verdicts", one test per seed and per missing
// feature, each failing where the cell differs from its expectation, the
// reason as output. Packages are named "KERNEL/suites/tun" so that tools
// grouping by package keep kernels apart.
func WriteJSON(w io.Writer, runs []*Run) error {
	enc := json.NewEncoder(w)
	for _, r := range runs {
		j := &jsonRun{enc: enc, run: r}
		for _, p := range r.tree() {
			j.pkg(p)
		}
		j.verdicts()
		j.costs()
		if j.err != nil {
			return j.err
		}
	}
	return nil
}

type jsonRun struct {
	enc *json.Encoder
	run *Run
	err error
	// last is the time of the last event written: the time of an event
	// whose test has none (a kernel report no event came with).
	last time.Time
}

// jsonEvent is an Event as go test -json writes it (cmd/test2json's
// TestEvent): Time on every event, Elapsed on every end, zero included.
type jsonEvent struct {
	Time    time.Time
	Action  string
	Package string   `json:",omitempty"`
	Test    string   `json:",omitempty"`
	Elapsed *float64 `json:",omitempty"`
	Output  string   `json:",omitempty"`
}

// emit writes e; Kernel stays empty, since the package names the kernel.
func (j *jsonRun) emit(e Event) {
	if j.err != nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = j.last
	}
	if e.Time.IsZero() {
		e.Time = cmp.Or(j.run.Ended, time.Now())
	}
	j.last = e.Time
	out := jsonEvent{Time: e.Time, Action: e.Action, Package: e.Package, Test: e.Test, Output: e.Output}
	switch e.Action {
	case "pass", "fail", "skip":
		out.Elapsed = &e.Elapsed
	}
	j.err = j.enc.Encode(out)
}

func (j *jsonRun) name(pkg string) string {
	return label(j.run) + "/" + pkg
}

// label is the kernel's name in package names: what --kernel said, and
// in a soak its round ("debian:7.3/round=2"), so that the rounds' tests
// keep apart in one report.
func label(r *Run) string {
	name := r.Name
	if name == "" {
		name = r.Kernel
	}
	if r.Round > 0 {
		name += fmt.Sprintf("/round=%d", r.Round)
	}
	return name
}

// title is the kernel's label in KTAP, with its round in a soak.
func (r *Run) title() string {
	if r.Round > 0 {
		return fmt.Sprintf("%s round=%d", r.Kernel, r.Round)
	}
	return r.Kernel
}

// pkg writes one package: its tests in a tree walk (a parent ends after
// its subtests, as go test reports it), then its summary line.
func (j *jsonRun) pkg(p *node) {
	pkg := j.name(p.name)
	start, end := j.run.Ended, j.run.Ended
	if t := p.first(); t != nil {
		start = t.Started
	}
	j.emit(Event{Time: start, Action: "start", Package: pkg})
	if p.test != nil {
		for i, l := range p.test.Output {
			if isSummaryLine(l) || isProtocolLine(l) {
				continue
			}
			j.emit(Event{Time: p.test.outTime(i), Action: "output", Package: pkg, Output: l + "\n"})
		}
		j.kernelLines(pkg, "", p.test)
		if !p.test.Ended.IsZero() {
			end = p.test.Ended
		}
	}
	for _, c := range p.children {
		j.test(pkg, c.name, c)
	}
	st := p.status()
	line, action := "ok  ", "pass"
	if st == Fail {
		line, action = "FAIL", "fail"
		j.emit(Event{Time: end, Action: "output", Package: pkg, Output: "FAIL\n"})
	} else {
		j.emit(Event{Time: end, Action: "output", Package: pkg, Output: "PASS\n"})
	}
	elapsed := end.Sub(start).Seconds()
	j.emit(Event{Time: end, Action: "output", Package: pkg, Output: fmt.Sprintf("%s\t%s\t%.3fs\n", line, pkg, elapsed)})
	j.emit(Event{Time: end, Action: action, Package: pkg, Elapsed: elapsed})
}

// test writes one test and its subtests.
func (j *jsonRun) test(pkg, name string, n *node) {
	t := n.test
	if t == nil {
		// A level no test of its own reported: t.Run("A/B") runs A/B
		// with no A. It spans its subtests.
		t = &Test{Name: name}
		if f := n.first(); f != nil {
			t.Started = f.Started
		}
		t.Ended = n.last()
		if !t.Started.IsZero() && !t.Ended.IsZero() {
			t.Elapsed = t.Ended.Sub(t.Started)
		}
	}
	j.emit(Event{Time: t.Started, Action: "run", Package: pkg, Test: name})
	var framing string
	for i, l := range t.Output {
		if strings.HasPrefix(strings.TrimSpace(l), "--- ") {
			framing = l
			continue
		}
		if isProtocolLine(l) {
			continue
		}
		j.emit(Event{Time: t.outTime(i), Action: "output", Package: pkg, Test: name, Output: l + "\n"})
	}
	for _, c := range n.children {
		j.test(pkg, name+"/"+c.name, c)
	}
	j.kernelLines(pkg, name, t)
	st := n.status()
	if t.Judged != "" {
		line := indent(name) + "    xmitcheck: " + judgedWord(st) + t.Judged + "\n"
		j.emit(Event{Time: t.Ended, Action: "output", Package: pkg, Test: name, Output: line})
	}
	action := map[Status]string{Pass: "pass", Fail: "fail", Skip: "skip", XFail: "skip"}[st]
	word := map[Status]string{Pass: "PASS", Fail: "FAIL", Skip: "SKIP", XFail: "SKIP"}[st]
	if framing == "" || !strings.Contains(framing, "--- "+word+":") {
		framing = fmt.Sprintf("%s--- %s: %s (%.2fs)", indent(name), word, name, t.Elapsed.Seconds())
	}
	j.emit(Event{Time: t.Ended, Action: "output", Package: pkg, Test: name, Output: framing + "\n"})
	j.emit(Event{Time: t.Ended, Action: action, Package: pkg, Test: name, Elapsed: t.Elapsed.Seconds()})
}

// kernelLines writes the kernel reports attached to t as its output.
func (j *jsonRun) kernelLines(pkg, name string, t *Test) {
	for _, l := range t.Kernel {
		j.emit(Event{Time: t.Ended, Action: "output", Package: pkg, Test: name, Output: indent(name) + "    " + l + "\n"})
	}
}

// verdicts writes the package "verdicts": one test per seed, one per
// feature the kernel should have and lacks, and the run's error.
func (j *jsonRun) verdicts() {
	r := j.run
	if len(r.Verdicts) == 0 && len(r.Misses) == 0 && r.Err == nil {
		return
	}
	pkg, at := j.name(VerdictPackage), r.Ended
	j.emit(Event{Time: at, Action: "start", Package: pkg})
	j.emit(Event{Time: at, Action: "output", Package: pkg, Output: "expectation: " + r.ExpectSource + "\n"})
	failed := false
	one := func(name string, ok bool, why string) {
		failed = failed || !ok
		action, word := "pass", "PASS"
		if !ok {
			action, word = "fail", "FAIL"
		}
		out := func(line string) {
			j.emit(Event{Time: at, Action: "output", Package: pkg, Test: name, Output: line + "\n"})
		}
		j.emit(Event{Time: at, Action: "run", Package: pkg, Test: name})
		out("=== RUN   " + name)
		out("    " + why)
		out("--- " + word + ": " + name + " (0.00s)")
		j.emit(Event{Time: at, Action: action, Package: pkg, Test: name})
	}
	for _, v := range r.Verdicts {
		one(string(v.Seed), !v.Mismatch(), v.Line())
	}
	for _, m := range r.Misses {
		one(string(m.Feature), false, m.Line())
	}
	for _, n := range r.notes() {
		j.emit(Event{Time: at, Action: "output", Package: pkg, Output: "note: " + n + "\n"})
	}
	if r.Err != nil {
		failed = true
		line := "error: " + strings.ReplaceAll(r.Err.Error(), "\n", "; ") + "\n"
		j.emit(Event{Time: at, Action: "output", Package: pkg, Output: line})
	}
	line, action := "ok  ", "pass"
	if failed {
		line, action = "FAIL", "fail"
	}
	j.emit(Event{Time: at, Action: "output", Package: pkg, Output: fmt.Sprintf("%s\t%s\t0.000s\n", line, pkg)})
	j.emit(Event{Time: at, Action: action, Package: pkg})
}

// judgedWord says which way the judge ended a test.
func judgedWord(st Status) string {
	if st == XFail {
		return "XFAIL "
	}
	return ""
}

// indent is go test's indentation of a test's framing lines: four spaces
// per level of subtest.
func indent(name string) string {
	return strings.Repeat("    ", strings.Count(name, "/"))
}

// isSummaryLine reports whether l is the binary's own closing PASS or FAIL
// (WriteJSON writes the package's judged one).
func isSummaryLine(l string) bool {
	return l == "PASS" || l == "FAIL"
}

// isProtocolLine reports whether l is a line a binary prints only for the
// host: the margins line it ends with (Run.Margins reads it) or a test's
// profile line (Run.Profiles): protocol, not output for a reader.
func isProtocolLine(l string) bool {
	return feature.IsProtocolLine(l)
}

// withoutProtocol is lines less the margins and profile lines.
func withoutProtocol(lines []string) []string {
	return slices.DeleteFunc(slices.Clone(lines), isProtocolLine)
}

// outTime is when the i-th line of Output came.
func (t *Test) outTime(i int) time.Time {
	if i < len(t.outAt) {
		return t.outAt[i]
	}
	return t.Ended
}

// last is when the node's last test ended.
func (n *node) last() time.Time {
	var out time.Time
	if n.test != nil && n.test.Ended.After(out) {
		out = n.test.Ended
	}
	for _, c := range n.children {
		if e := c.last(); e.After(out) {
			out = e
		}
	}
	return out
}

// first is the node's earliest test.
func (n *node) first() *Test {
	var out *Test
	var walk func(*node)
	walk = func(n *node) {
		if n.test != nil && !n.test.Started.IsZero() && (out == nil || n.test.Started.Before(out.Started)) {
			out = n.test
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(n)
	return out
}
