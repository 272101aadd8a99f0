package main

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/results"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// run003 is a run whose one test of seed 003 ended as status, after
// logging lines, judged against expect.
func run003(t *testing.T, status string, expect string, lines ...string) *results.Run {
	t.Helper()
	r := results.NewRun("build:x")
	const pkg = "github.com/xmitcheck/xmitcheck/suites/qdisc"
	r.Add(results.Event{Action: "run", Package: pkg, Test: "TestFastPath"})
	for _, l := range append([]string{feature.Record{Seed: feature.Seed003}.String()}, lines...) {
		r.Add(results.Event{Action: "output", Package: pkg, Test: "TestFastPath", Output: "    x_test.go:1: " + l + "\n"})
	}
	r.Add(results.Event{Action: status, Package: pkg, Test: "TestFastPath"})
	r.Finish(nil)
	e, err := feature.ParseExpectation(expect)
	assert.NilError(t, err)
	r.Judge(e, "--expect "+expect)
	return r
}

func TestBisectExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() *results.Run
		want int
	}{
		{"good", func() *results.Run {
			return run003(t, "pass", "003", feature.Record{Seed: feature.Seed003, Shown: true, Why: "fast path taken"}.String())
		}, bisectGood},
		{"passed without showing 003", func() *results.Run { return run003(t, "pass", "003") }, bisectSkip},
		{"broken", func() *results.Run { return run003(t, "fail", "003", "scheduled 12 times with defer_list non-empty") }, bisectBad},
		{"absent where expected", func() *results.Run {
			return run003(t, "skip", "003", feature.Record{Feature: feature.QdiscDeferList, Absent: true, Why: "no member"}.String())
		}, bisectBad},
		{"absent as expected", func() *results.Run {
			return run003(t, "skip", "!003", feature.Record{Feature: feature.QdiscDeferList, Absent: true, Why: "no member"}.String())
		}, bisectGood},
		{"crash under a test", func() *results.Run {
			r := run003(t, "pass", "003")
			r.Err = fmt.Errorf("%w: kernel panic during TestFastPath", vmtest.ErrCrash)
			return r
		}, bisectBad},
		{"no boot", func() *results.Run {
			r := results.NewRun("build:x")
			r.Finish(fmt.Errorf("%w: %w: boot timeout", vmtest.ErrNoBoot, vmtest.ErrCrash))
			return r
		}, bisectSkip},
		{"infrastructure", func() *results.Run {
			r := results.NewRun("build:x")
			r.Finish(fmt.Errorf("qemu failed: no such file"))
			return r
		}, bisectSkip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, why := bisectExit(tc.run())
			assert.Equal(t, code, tc.want, why)
		})
	}
}
