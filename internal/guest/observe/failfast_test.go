package observe

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// fakeTB is a test that Step and Fault act on: it records a skip, a
// failure and its cleanups instead of ending a real test.
type fakeTB struct {
	testing.TB
	name            string
	failed, skipped bool
	why             string
	cleanups        []func()
}

type stopped struct{}

func (f *fakeTB) Name() string          { return f.name }
func (f *fakeTB) Helper()               {}
func (f *fakeTB) Log(...any)            {}
func (f *fakeTB) Failed() bool          { return f.failed }
func (f *fakeTB) Skipped() bool         { return f.skipped }
func (f *fakeTB) Cleanup(fn func())     { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(string, ...any) { f.failed = true }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true; panic(stopped{}) }
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped, f.why = true, fmt.Sprintf(format, args...)
	panic(stopped{})
}

// run runs body as the test name and its cleanups, as testing would.
func run(name string, body func(tb *fakeTB)) *fakeTB {
	f := &fakeTB{name: name}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stopped); !ok {
					panic(r)
				}
			}
		}()
		body(f)
	}()
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	return f
}

// TestStep: under fail-fast, a seed's first real failure skips its next
// tests and subtests, naming the test that failed it; a fault stops
// nothing, nor does a failure of another seed; without the variable
// nothing is skipped.
func TestStep(t *testing.T) {
	tag := func(name string, s feature.Seed) { tagged(name, s) }
	tag("TestA", feature.Seed000Tun)
	tag("TestB", feature.Seed002)
	step := func(name string, fail, fault bool) *fakeTB {
		return run(name, func(tb *fakeTB) {
			Step(tb)
			if fault {
				Fault(tb, feature.Environment, "no tun")
			}
			if fail {
				tb.Errorf("the queue never woke")
			}
		})
	}
	assert.Check(t, !step("TestA/x", true, false).skipped, "without the variable nothing skips")
	failFast.failed = nil

	t.Setenv(feature.FailFastEnv, "1")
	assert.Check(t, !step("TestA/faulted", true, true).skipped)
	leaning := run("TestA/over-a-tap", func(tb *fakeTB) {
		Step(tb)
		LeansOn(tb, feature.Seed000Vhost, "a vhost-net guest")
		tb.Errorf("stalled")
	})
	assert.Check(t, !leaning.skipped)
	assert.Check(t, !step("TestA/after-fault", false, false).skipped, "a fault, or a test over another "+
		"seed's machinery, fails no seed")
	assert.Check(t, !step("TestA/fails", true, false).skipped)
	next := step("TestA/next", false, false)
	assert.Check(t, next.skipped)
	assert.Check(t, is.Equal(next.why, "fail-fast: seed 000-tun already failed in this binary (TestA/fails): not run"))
	assert.Check(t, !step("TestB/other-seed", false, false).skipped, "another seed's tests go on")
	failFast.failed, failFast.faulted = nil, nil
}
