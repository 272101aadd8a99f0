// Package results is the host's pipeline after the VMs: it models what a
// run produced (go test events labelled with their kernel, one Test each),
// judges it (judge.go: Run.Judge is the one place that turns the tests'
// records and an expectation into a verdict per seed) and writes it out as
// a text summary, KTAP, JUnit XML or go test -json events. Its input is
// what the test binaries print: test2json.go turns their raw
// -test.v=test2json output into events, whatever carried it.
//
// Two words, two things: a test ends with a Status (pass, fail, skip,
// xfail); a seed gets a verdict, whose State is present, absent, BROKEN or
// error.
package results

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/host/cost"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// Event is one `go test -json` event (cmd/test2json's TestEvent) with the
// kernel it ran on.
type Event struct {
	Time    time.Time `json:",omitzero"`
	Action  string
	Package string  `json:",omitempty"`
	Test    string  `json:",omitempty"`
	Elapsed float64 `json:",omitempty"`
	Output  string  `json:",omitempty"`
	Kernel  string  `json:",omitempty"`
	Round   int     `json:",omitempty"`
}

// Status is how a test ended; seeds get verdicts (State).
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
	// XFail is an expected failure: the test saw a known defect, or a
	// seed's absence, exactly where the expectation allows it
	// (feature.Known, feature.Absent; Run.Judge decides). It is counted
	// apart.
	XFail Status = "xfail"
)

// Test is one test (or subtest) and what it printed.
type Test struct {
	Package string
	// Name is the full go test name, "TestA/sub".
	Name    string
	Status  Status
	Elapsed time.Duration
	// Output is everything the test printed, line by line.
	Output []string
	// Kernel holds reports attached by the runner (splats, crashes): they
	// fail the test whatever it said itself.
	Kernel []string
	// Artefact is set when the test failed through no fault of the
	// kernel's (the emulator's): it counts as not tested.
	Artefact bool
	// Cancelled is set when the run was stopped (a signal, a deadline)
	// before the test ended: it counts as not tested.
	Cancelled bool
	// own is how the test ended by itself, whatever reports failed it:
	// the judge restores it when it takes them all out (noteReports).
	own Status
	// Judged is why Run.Judge changed the status the test ended with:
	// an expected failure, or a failure where a skip would hide a
	// regression.
	Judged string
	done   bool
	// Started and Ended are when the test's first and last events came;
	// outAt holds when each line of Output came.
	Started, Ended time.Time
	outAt          []time.Time
	// partial is set while the last of Output is a line test2json split
	// (it cuts lines longer than 1 KiB into events): the next piece joins it.
	partial bool
}

// Reason is why the judge changed the test's status, or else the last
// line the test logged before it ended (its profile line, printed by its
// last cleanup, aside), without its file:line prefix: the skip reason for
// a skipped test.
func (t *Test) Reason() string {
	if t.Judged != "" {
		return t.Judged
	}
	for i := len(t.Output) - 1; i >= 0; i-- {
		l := strings.TrimSpace(t.Output[i])
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") || isProtocolLine(l) {
			continue
		}
		if _, after, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:len(l)-len(after)], ".go:") {
			l = after
		}
		return l
	}
	return ""
}

// Run is everything one kernel produced.
type Run struct {
	// Kernel is the kernel's label ("debian:7.3 (7.3.4-1)").
	Kernel string
	// Tests in the order they started.
	Tests []*Test
	// Err is set when the run itself failed (crash, hang, boot failure).
	Err error
	// BootToFirstTest and Total are the run's timings, when known; Accel
	// is how the guest ran ("kvm", "tcg"; empty on the host).
	BootToFirstTest, Total time.Duration
	Accel                  string
	// Expect is what the kernel must show and ExpectSource where that
	// came from; Verdicts and Misses are Judge's findings.
	Expect       expect.Expectation
	ExpectSource string
	Verdicts     []Verdict
	Misses       []FeatureMiss
	// Unloadable, when set, says why the run could not load what the
	// suites need (modules the kernel builds as modules, with no modules
	// directory): a seed it would call absent or BROKEN is error instead.
	Unloadable string
	// Orphans are failures that belong to no seed (a kernel report while
	// no test binary ran): Judge lists them, as "test: first line".
	Orphans []string
	// Noted are the kernel reports Judge noted and did not judge (a
	// sanitizer's in no seed's code, a known benign race: noted.go), as
	// "test: first line (why)".
	Noted []string
	// Raced are the races the tests drove while a sanitizer watched
	// (raced.go): "test: seed: N handshakes; what it did".
	Raced []string
	// Notes are what the runner did about the run: boots again after a
	// crash, reruns after an emulator artefact.
	Notes []string
	// Name is what --kernel said ("debian:7.3"), the prefix of the
	// packages in JSON; Ended is when Finish was called.
	Name  string
	Ended time.Time
	// Costs are the cost rows measured on the kernel (run --cost): their
	// own column, never a verdict; CostSamples every result they were
	// made of, for a reader who would judge them again.
	Costs       []cost.Row
	CostSamples []cost.Sample
	// Round is the run's round in a soak (run -count N), from 1; 0 when
	// the kernel runs once. Reports name a round's tests apart (label).
	Round   int
	byName  map[string]*Test
	running []*Test
	// events are every event Add took, as the guests sent them.
	events []Event
	// earlier are failed tests of tries the emulator ended (Resume).
	earlier []*Test
}

// NewRun starts the record of one kernel's run.
func NewRun(kernel string) *Run {
	return &Run{Kernel: kernel, byName: map[string]*Test{}}
}

func key(pkg, name string) string { return pkg + "\x00" + name }

// Add records one event. Events without a test name are the package's own
// (its binary's output outside tests, its exit verdict); they are kept as a
// Test with an empty Name.
func (r *Run) Add(e Event) {
	r.events = append(r.events, e)
	t := r.byName[key(e.Package, e.Test)]
	if t == nil {
		t = &Test{Package: e.Package, Name: e.Test, Started: e.Time}
		r.byName[key(e.Package, e.Test)] = t
		r.Tests = append(r.Tests, t)
	}
	t.Ended = e.Time
	switch e.Action {
	case "run", "cont":
		r.dropRunning(t)
		r.running = append(r.running, t)
	case "output":
		line, whole := strings.CutSuffix(e.Output, "\n")
		if t.partial {
			t.Output[len(t.Output)-1] += line
		} else {
			t.Output = append(t.Output, line)
			t.outAt = append(t.outAt, e.Time)
		}
		t.partial = !whole
	case "pass", "fail", "skip":
		t.Status, t.own = Status(e.Action), Status(e.Action)
		if len(t.Kernel) > 0 {
			t.Status = Fail
		}
		t.Elapsed = time.Duration(e.Elapsed * float64(time.Second))
		t.done = true
		r.dropRunning(t)
		if t.Name == "" && t.Status == Pass {
			r.passBenchmarks(t.Package)
		}
	}
}

// passBenchmarks ends the package's benchmarks that are still open: go
// test prints no "--- PASS" for a benchmark, so test2json never ends one
// that passed; the package passing says they did.
func (r *Run) passBenchmarks(pkg string) {
	for _, t := range r.Tests {
		if t.Package == pkg && !t.done && strings.HasPrefix(t.Name, "Benchmark") {
			t.Status, t.done = Pass, true
			r.dropRunning(t)
		}
	}
}

func (r *Run) dropRunning(t *Test) {
	for i, x := range r.running {
		if x == t {
			r.running = append(r.running[:i], r.running[i+1:]...)
			return
		}
	}
}

// Running returns the innermost test that has started and not ended.
func (r *Run) Running() *Test {
	if len(r.running) == 0 {
		return nil
	}
	return r.running[len(r.running)-1]
}

// AttachKernel fails the running test with a kernel report (a splat, a
// panic, a hang). When no test runs it fails pkg's binary, the one that was
// running (its seeds are then BROKEN), or, when none was, a test named
// after what happened in the package "kernel".
func (r *Run) AttachKernel(pkg, what string, lines []string) {
	t := r.Running()
	if t == nil && pkg != "" {
		t = r.byName[key(pkg, "")]
		if t == nil {
			t = &Test{Package: pkg}
			r.byName[key(pkg, "")] = t
			r.Tests = append(r.Tests, t)
		}
	}
	if t == nil {
		t = &Test{Package: "kernel", Name: what}
		r.Tests = append(r.Tests, t)
	}
	t.Kernel = append(t.Kernel, "kernel "+what+":")
	t.Kernel = append(t.Kernel, lines...)
	t.Status = Fail
}

// AttachKernelAt fails the test of pkg named test with a kernel report
// (where says where it started, when outside a test): the test whose
// window in the kernel log held it, not the one the host saw last. An
// empty test fails pkg's binary, so its seeds are BROKEN. The test need not
// have reported anything yet: the console can run ahead of its events.
func (r *Run) AttachKernelAt(pkg, test, what, where string, lines []string) {
	t := r.byName[key(pkg, test)]
	if t == nil {
		t = &Test{Package: pkg, Name: test}
		r.byName[key(pkg, test)] = t
		r.Tests = append(r.Tests, t)
	}
	head := "kernel " + what + ":"
	if where != "" {
		head = "kernel " + what + ", " + where + ":"
	}
	t.Kernel = append(append(t.Kernel, head), lines...)
	t.Status = Fail
}

// Finish ends the run: tests that never ended (the kernel died under them)
// fail, and so does the run when err is set.
func (r *Run) Finish(err error) {
	r.Err, r.Ended = err, time.Now()
	r.keepEarlier()
	for _, t := range r.Tests {
		if !t.done && t.Status == "" {
			t.Status = Fail
			t.Output = append(t.Output, "test did not finish")
		}
	}
	r.running = nil
}

// Tally is how many leaf tests ended each way.
type Tally struct {
	Pass, Fail, Skip, XFail int
}

func (t Tally) add(u Tally) Tally {
	return Tally{t.Pass + u.Pass, t.Fail + u.Fail, t.Skip + u.Skip, t.XFail + u.XFail}
}

func (t Tally) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped, %d xfail", t.Pass, t.Fail, t.Skip, t.XFail)
}

// Counts tallies the leaf tests. A package whose binary failed with no
// failing test (a panic, a leak found by TestMain) counts as one failure,
// and so does a run that failed without a failing test.
func (r *Run) Counts() Tally {
	var c Tally
	for _, t := range r.Tests {
		if t.Name == "" {
			if t.Status == Fail && !r.anyFailed(t.Package) {
				c.Fail++
			}
			continue
		}
		if r.hasChildren(t) {
			continue
		}
		switch t.Status {
		case Pass:
			c.Pass++
		case Fail:
			c.Fail++
		case Skip:
			c.Skip++
		case XFail:
			c.XFail++
		}
	}
	if r.Err != nil && c.Fail == 0 {
		c.Fail++
	}
	return c
}

func (r *Run) anyFailed(pkg string) bool {
	for _, t := range r.Tests {
		if t.Package == pkg && t.Name != "" && t.Status == Fail {
			return true
		}
	}
	return false
}

func (r *Run) hasChildren(t *Test) bool {
	for _, c := range r.Tests {
		if c.Package == t.Package && strings.HasPrefix(c.Name, t.Name+"/") {
			return true
		}
	}
	return false
}

// Failed reports whether anything in the run failed.
func (r *Run) Failed() bool {
	return r.Counts().Fail > 0
}

// BenchmarkSamples returns the run's benchmark results, parsed, each with
// its package's short name ("suites/tun"), in the order they came.
func (r *Run) BenchmarkSamples() []cost.Sample {
	var out []cost.Sample
	for _, t := range r.Tests {
		for _, l := range t.Output {
			if s, ok := cost.ParseLine(ShortPackage(t.Package), l); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// BenchmarkLines returns the benchmark result lines the run's binaries
// printed ("BenchmarkX-2  1  123 ns/op  456 rx-pps"), the input benchstat
// reads.
func (r *Run) BenchmarkLines() []string {
	var out []string
	for _, t := range r.Tests {
		for _, l := range t.Output {
			if strings.HasPrefix(l, "Benchmark") && strings.Contains(l, "\t") {
				out = append(out, l)
			}
		}
	}
	return out
}

// AddBoot adds one boot's timings: the boot-to-first-test of the first
// boot that started a test (one the emulator killed before that has none),
// the time of every boot, the accelerator of the last.
func (r *Run) AddBoot(bootToFirstTest, total time.Duration, accel string) {
	if r.BootToFirstTest == 0 {
		r.BootToFirstTest = bootToFirstTest
	}
	r.Total += total
	r.Accel = accel
}

// Note records what the runner did about the run.
func (r *Run) Note(n string) { r.Notes = append(r.Notes, n) }

// Resume readies pkg's binary to run again after the emulator killed it,
// from where it was: the top-level tests the killed try had finished stay
// as they ended, subtests and all, and Resume returns their names for the
// next try to skip. What the try left unfinished, and the kernel reports of
// the artefact, are forgotten. A test among those that had already failed
// (a subtest that ended before the artefact) stays failed whatever a later
// try of it says (Finish puts it back): the emulator ended that try after
// the failure, it did not cause it.
func (r *Run) Resume(pkg string) (finished []string) {
	for _, t := range r.Tests {
		if t.Package == pkg && t.Name != "" && !strings.Contains(t.Name, "/") && t.done {
			finished = append(finished, t.Name)
		}
	}
	kept := func(t *Test) bool {
		top, _, _ := strings.Cut(t.Name, "/")
		return t.Package == pkg && t.Name != "" && slices.Contains(finished, top)
	}
	for _, t := range r.Tests {
		if t.Package == pkg && t.Name != "" && !kept(t) && t.done && t.Status == Fail && len(t.Kernel) == 0 &&
			!slices.ContainsFunc(r.earlier, func(e *Test) bool { return e.Package == pkg && e.Name == t.Name }) {
			r.earlier = append(r.earlier, t)
		}
	}
	gone := func(t *Test) bool { return t.Package == pkg && !kept(t) }
	r.Tests = slices.DeleteFunc(r.Tests, gone)
	for k, t := range r.byName {
		if gone(t) {
			delete(r.byName, k)
		}
	}
	r.running = slices.DeleteFunc(r.running, gone)
	return finished
}

// keepEarlier puts back the failures of tries Resume ended, where a later
// try did not fail the same test.
func (r *Run) keepEarlier() {
	for _, e := range r.earlier {
		t := r.byName[key(e.Package, e.Name)]
		switch {
		case t == nil:
			r.Tests = append(r.Tests, e)
			r.byName[key(e.Package, e.Name)] = e
		case t.Status != Fail:
			e.Output = append(e.Output, fmt.Sprintf("(failed in a try the emulator ended; the next try ended %s)", t.Status))
			r.Tests[slices.Index(r.Tests, t)] = e
			r.byName[key(e.Package, e.Name)] = e
		}
	}
	r.earlier = nil
}

// DropKernelReports removes, from the from-th test on, the kernel reports
// no test owned (AttachKernel with none running): those of a boot that
// goes again because the emulator, not the kernel, killed it.
func (r *Run) DropKernelReports(from int) {
	owned := func(t *Test) bool { return t.Package == "kernel" }
	r.Tests = append(r.Tests[:from:from], slices.DeleteFunc(r.Tests[from:], owned)...)
}

// Cancel marks every test that has not ended as cancelled: the user or a
// deadline stopped the run, not the kernel.
func (r *Run) Cancel() {
	for _, t := range r.Tests {
		if !t.done {
			t.Cancelled = true
		}
	}
}

// MarkArtefact makes the tests of pkg that the emulator ended artefacts:
// those left unfinished and those that failed on the artefact's own
// report. They count as not tested; a test that failed before stays a
// failure.
func (r *Run) MarkArtefact(pkg string) {
	for _, t := range r.Tests {
		if t.Package == pkg && (!t.done || t.Status == Fail && len(t.Kernel) > 0) {
			t.Artefact = true
		}
	}
}
