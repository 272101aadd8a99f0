package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels/kbuild"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

const qdiscPkg = "github.com/xmitcheck/xmitcheck/suites/qdisc"

// step is one bisection step's run: tests of pkg, each (name, status,
// lines), judged against expect as the seeds it names.
func step(t *testing.T, spec string, runErr error, tests ...[]string) (*results.Run, []feature.Seed) {
	t.Helper()
	r := results.NewRun("build:x")
	for _, tc := range tests {
		r.Add(results.Event{Action: "run", Package: tc[0], Test: tc[1]})
		for _, l := range tc[3:] {
			r.Add(results.Event{Action: "output", Package: tc[0], Test: tc[1], Output: "    x_test.go:1: " + l + "\n"})
		}
		r.Add(results.Event{Action: tc[2], Package: tc[0], Test: tc[1]})
	}
	r.Finish(runErr)
	e, err := expect.Parse(spec)
	assert.NilError(t, err)
	var named []feature.Seed
	for s := range e.Seeds {
		named = append(named, s)
	}
	r.Judge(e, "--expect "+spec, named...)
	return r, named
}

var (
	tag003   = feature.Record{Seed: feature.Seed003}.String()
	shown003 = feature.Record{Seed: feature.Seed003, Shown: true, Why: "fast path taken"}.String()
	tag000   = feature.Record{Seed: feature.Seed000Tun}.String()
	noFlag   = feature.Record{
		Feature: feature.IFFBackpressure, Absent: true, Why: "TUNGETFEATURES=0x7173 lacks 0x80",
	}.String()
	never    = feature.Record{Seed: feature.Seed003, Absent: true, Why: "0 of 300 schedules took the fast path"}.String()
	artefact = fmt.Errorf("suites/devmap could not be tested: %w three times", runner.ErrStaleText)
)

func TestBisectExit(t *testing.T) {
	fastPath := []string{qdiscPkg, "TestFastPath", "pass", tag003, shown003}
	tap := []string{qdiscPkg, "TestTap", "skip", tag000, noFlag}
	neverShown := []string{qdiscPkg, "TestFastPath", "skip", tag003, never}
	for _, tc := range []struct {
		name   string
		expect string
		err    error
		tests  [][]string
		want   int
	}{
		{"good", "003", nil, [][]string{fastPath}, bisectGood},
		{"passed without showing 003", "003", nil, [][]string{{qdiscPkg, "TestNoStrandedPackets", "pass", tag003}}, bisectSkip},
		{"broken", "003", nil, [][]string{
			{qdiscPkg, "TestFastPath", "fail", tag003, "scheduled 12 times with defer_list non-empty"},
		}, bisectBad},
		{"absent where expected", "003", nil, [][]string{neverShown}, bisectBad},
		{"absent as asked", "!003", nil, [][]string{neverShown}, bisectGood},
		{"a seed it did not name is not judged", "003", nil, [][]string{fastPath, tap}, bisectGood},
		{"no test of the named seed", "003", nil, [][]string{tap}, bisectSkip},
		{"a failure wins over an artefact", "003", artefact, [][]string{
			{qdiscPkg, "TestFastPath", "fail", tag003, "stranded 3 frames"},
		}, bisectBad},
		{"an artefact alone is untestable", "003", artefact, [][]string{fastPath}, bisectSkip},
		{"no boot", "003", fmt.Errorf("%w: %w: boot timeout", vmtest.ErrNoBoot, vmtest.ErrCrash), nil, bisectSkip},
		{"infrastructure", "003", errors.New("qemu failed: no such file"), nil, bisectAbort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, scope := step(t, tc.expect, tc.err, tc.tests...)
			code, why := bisectExit(r, scope)
			assert.Equal(t, code, tc.want, why)
		})
	}
}

func TestBisectCrashUnderATest(t *testing.T) {
	r := results.NewRun("build:x")
	r.Add(results.Event{Action: "run", Package: qdiscPkg, Test: "TestFastPath"})
	r.Add(results.Event{
		Action: "output", Package: qdiscPkg, Test: "TestFastPath", Output: "    x_test.go:1: " + tag003 + "\n",
	})
	r.AttachKernel(qdiscPkg, "panic", []string{"Kernel panic - not syncing: Fatal exception in interrupt"})
	r.Finish(errors.Join(artefact, fmt.Errorf("%w: kernel panic during TestFastPath", vmtest.ErrCrash)))
	e, _ := expect.Parse("003")
	r.Judge(e, "--expect 003", feature.Seed003)
	code, why := bisectExit(r, []feature.Seed{feature.Seed003})
	assert.Equal(t, code, bisectBad, why)
	assert.Equal(t, runExit([]*results.Run{r}), exitCrashed, "a crash after an artefact still says crash")
}

// TestStepError holds a step that could not judge its commit to git bisect
// run's convention: only a build that failed on the tree skips the commit;
// a setup no commit can fix, or a cancelled step, stops the bisection.
func TestStepError(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	build := fmt.Errorf("%w: make bzImage: exit status 2", kbuild.ErrBuild)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want int
	}{
		{"the tree does not build", live, build, bisectSkip},
		{"a patch file is missing", live, errors.New("--apply x.patch: open x.patch: no such file"), bisectAbort},
		{"tools are missing", live, errors.New("building a kernel needs flex: run `make deps`"), bisectAbort},
		{"the suites do not compile", live, errors.New("go test -c ./suites/qdisc: exit status 1"), bisectAbort},
		{"cancelled", cancelled, build, bisectAbort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, stepError(tc.ctx, tc.err), tc.want)
		})
	}
}
