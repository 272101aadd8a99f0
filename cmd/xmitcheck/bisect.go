package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/kernels/kbuild"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// Exit codes of `bisect`, git bisect run's convention.
const (
	bisectGood  = 0   // every verdict as expected, every test passed
	bisectBad   = 1   // a verdict differs, a test failed, or the kernel crashed or hung under a test
	bisectSkip  = 125 // this commit does not build or boot, or could not be tested
	bisectAbort = 128 // bad usage, a setup that no commit can fix, or a cancelled step: stop
)

// stepError ends a bisection step that could not judge the commit: a build
// that failed on the tree (kbuild.ErrBuild) leaves this commit untestable
// (125); anything else (a patch file or a tool missing, suites that do not
// compile, qemu missing, the step cancelled) would fail every commit the
// same way, so the bisection stops (128).
func stepError(ctx context.Context, err error) int {
	code := bisectAbort
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("the step was cancelled (%w): %v", ctx.Err(), err)
	case errors.Is(err, kbuild.ErrBuild):
		code = bisectSkip
	}
	what := "stopping the bisection"
	if code == bisectSkip {
		what = "cannot test this commit"
	}
	fmt.Fprintf(os.Stderr, "xmitcheck: bisect: %s (exit %d): %v\n", what, code, err)
	return code
}

// cmdBisect is one step of `git bisect run xmitcheck bisect --tree .`:
// build the checked-out tree (cached by content), boot it, run the suites
// and judge the seeds against --expect (default: the seeds of the
// reference kernel).
func cmdBisect(args []string) int {
	fs, s := suiteFlags("bisect", "[--tree DIR] [-C CHECKOUT] [--expect SEEDS] [flags] [PKG...]",
		"One step of git bisect run: build the tree (cached by content), boot it, run the suites\n"+
			"and judge the seeds --expect names.\nExit 0 good, 1 bad, 125 untestable, 128 bad usage.")
	var b buildFlags
	b.register(fs)
	if err := s.bisectFlags(fs, &b, args); err != nil {
		if err == errHelp {
			return bisectGood
		}
		fmt.Fprintln(os.Stderr, "xmitcheck:", err)
		return bisectAbort
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return s.bisectStep(ctx, b)
}

// bisectFlags parses and checks bisect's flags: no --kernel, a kernel
// tree, and the run's flags as run checks them.
func (s *suiteRun) bisectFlags(fs *flag.FlagSet, b *buildFlags, args []string) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(s.Kernels) > 0 {
		return errors.New("bisect builds its kernel from --tree: no --kernel")
	}
	if err := b.check(); err != nil {
		return err
	}
	if b.tree == "" {
		b.tree = "."
	}
	tree, err := filepath.Abs(b.tree)
	if err == nil {
		_, err = os.Stat(filepath.Join(tree, "Makefile"))
	}
	if err != nil {
		return fmt.Errorf("bisect: --tree %s is not a kernel tree (%v): run it in the tree, or give --tree DIR", b.tree, err)
	}
	b.tree = tree
	s.Kernels = []string{"build:bisect"} // checked by Check(), named by bisectStep
	s.Only = true
	// A BROKEN seed's other tests decide nothing the step needs.
	s.Failfast = true
	if err := cmp.Or(s.Check(), s.checkOutputs()); err != nil {
		return err
	}
	s.parseArgs(fs)
	return nil
}

// bisectStep builds the tree, runs the suites on it and judges the step.
func (s *suiteRun) bisectStep(ctx context.Context, b buildFlags) int {
	start := time.Now()
	built, err := kbuild.Build(ctx, b.options())
	if err != nil {
		return stepError(ctx, err)
	}
	k, err := kernels.Resolve(ctx, "build:"+built.Name, kernels.Options{Progress: runner.Progress()})
	if err != nil {
		return stepError(ctx, err)
	}
	builtAt := time.Now()
	runs, err := s.Exec(ctx, []*kernels.Kernel{k})
	if err == nil && ctx.Err() != nil {
		err = errors.New("the run stopped")
	}
	if err != nil {
		return stepError(ctx, err)
	}
	_, _, scope, err := s.Expectation(k)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xmitcheck:", err)
		return bisectAbort
	}
	code, why := bisectExit(runs[0], scope)
	fmt.Fprintf(os.Stderr, "xmitcheck: bisect: %s (exit %d; build %v, boot and tests %v)\n", why, code,
		builtAt.Sub(start).Round(time.Second), time.Since(builtAt).Round(time.Second))
	return code
}

// bisectExit maps one kernel's run to git bisect run's exit codes,
// judging only the seeds in scope (all of them when scope is empty): a real
// failure there is bad whatever else went wrong; then anything that left
// the question unanswered (a run error, an emulator artefact, a seed no
// test judged, a failure outside every seed's tests) is untestable.
func bisectExit(r *results.Run, scope []feature.Seed) (int, string) {
	in := func(s feature.Seed) bool { return len(scope) == 0 || slices.Contains(scope, s) }
	for _, v := range r.Verdicts {
		switch {
		case !in(v.Seed):
		case v.State == results.Broken:
			return bisectBad, "bad: " + v.Line()
		case v.State != results.Error && v.Want != "" && v.State != v.Want:
			return bisectBad, "bad: " + v.Line()
		}
	}
	for _, m := range r.Misses {
		if m.Present || r.Expect.Features[m.Feature] {
			return bisectBad, "bad: " + m.Line()
		}
	}
	if r.Err != nil {
		// The kernel (no boot, a crash outside the named seeds' tests) or
		// the emulator: this commit is untestable. Anything else is the
		// setup, which no other commit would pass.
		if errors.Is(r.Err, vmtest.ErrCrash) || errors.Is(r.Err, runner.ErrStaleText) {
			return bisectSkip, "skip: " + strings.ReplaceAll(r.Err.Error(), "\n", "; ")
		}
		return bisectAbort, "stop: " + strings.ReplaceAll(r.Err.Error(), "\n", "; ")
	}
	for _, v := range r.Verdicts {
		if in(v.Seed) && v.State == results.Error {
			return bisectSkip, "skip: " + v.Line()
		}
	}
	if len(r.Orphans) > 0 {
		return bisectSkip, "skip: a failure outside every seed's tests: " + r.Orphans[0]
	}
	return bisectGood, "good: every verdict as expected"
}
