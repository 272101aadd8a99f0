// Package results models what a run produced — go test events labelled
// with the kernel they ran on — and writes it out as a text summary, KTAP
// (kselftest's format, one nested block per kernel), JUnit XML, or a stream
// of go test -json events. It knows nothing about how events were produced.
package results

import (
	"strings"
	"time"
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
}

// Status is a test's verdict.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
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
	done   bool
}

// Reason is the last line the test logged before it ended, without its
// file:line prefix: the skip reason for a skipped test.
func (t *Test) Reason() string {
	for i := len(t.Output) - 1; i >= 0; i-- {
		l := strings.TrimSpace(t.Output[i])
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
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
	// BootToFirstTest and Total are the run's timings, when known.
	BootToFirstTest, Total time.Duration
	byName                 map[string]*Test
	running                []*Test
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
	t := r.byName[key(e.Package, e.Test)]
	if t == nil {
		t = &Test{Package: e.Package, Name: e.Test}
		r.byName[key(e.Package, e.Test)] = t
		r.Tests = append(r.Tests, t)
	}
	switch e.Action {
	case "run", "cont":
		r.dropRunning(t)
		r.running = append(r.running, t)
	case "output":
		t.Output = append(t.Output, strings.TrimSuffix(e.Output, "\n"))
	case "pass", "fail", "skip":
		t.Status = Status(e.Action)
		if len(t.Kernel) > 0 {
			t.Status = Fail
		}
		t.Elapsed = time.Duration(e.Elapsed * float64(time.Second))
		t.done = true
		r.dropRunning(t)
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

// AttachKernel fails the running test (or, when none runs, a test named
// after what happened) with a kernel report: a splat, a panic, a hang.
func (r *Run) AttachKernel(what string, lines []string) {
	t := r.Running()
	if t == nil {
		t = &Test{Package: "kernel", Name: what}
		r.Tests = append(r.Tests, t)
	}
	t.Kernel = append(t.Kernel, "kernel "+what+":")
	t.Kernel = append(t.Kernel, lines...)
	t.Status = Fail
}

// Finish ends the run: tests that never ended (the kernel died under them)
// fail, and so does the run when err is set.
func (r *Run) Finish(err error) {
	r.Err = err
	for _, t := range r.Tests {
		if !t.done && t.Status == "" {
			t.Status = Fail
			t.Output = append(t.Output, "test did not finish")
		}
	}
	r.running = nil
}

// Counts returns how many leaf tests passed, failed and were skipped. A
// package whose binary failed with no failing test (a panic, a leak found by
// TestMain) counts as one failure.
func (r *Run) Counts() (pass, fail, skip int) {
	for _, t := range r.Tests {
		if t.Name == "" {
			if t.Status == Fail && !r.anyFailed(t.Package) {
				fail++
			}
			continue
		}
		if r.hasChildren(t) {
			continue
		}
		switch t.Status {
		case Pass:
			pass++
		case Fail:
			fail++
		case Skip:
			skip++
		}
	}
	if r.Err != nil && fail == 0 {
		fail++
	}
	return pass, fail, skip
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
	_, f, _ := r.Counts()
	return f > 0
}
