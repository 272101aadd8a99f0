package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// Exit codes of `bisect`, git bisect run's convention.
const (
	bisectGood  = 0   // every verdict as expected, every test passed
	bisectBad   = 1   // a verdict differs, a test failed, or the kernel crashed or hung under a test
	bisectSkip  = 125 // the commit does not build or boot, or could not be tested
	bisectAbort = 128 // bad usage: stop the bisection
)

// cmdBisect is one step of `git bisect run xmitcheck bisect --tree .`:
// build the checked-out tree (cached by content), boot it, run the suites
// and judge the seeds against --expect (default: the seeds of the
// reference kernel).
func cmdBisect(args []string) int {
	fs := newFlags("bisect")
	var s suiteRun
	s.register(fs)
	var b buildFlags
	b.register(fs)
	suites := fs.String("C", "", "the xmitcheck checkout whose suites run (git bisect run starts in the kernel tree)")
	if err := parse(fs, args); err != nil {
		fmt.Fprintln(os.Stderr, "xmitcheck:", err)
		return bisectAbort
	}
	if len(s.v.kernels) > 0 {
		fmt.Fprintln(os.Stderr, "xmitcheck: bisect builds its kernel from --tree: no --kernel")
		return bisectAbort
	}
	if b.tree == "" {
		b.tree = "."
	}
	tree, err := filepath.Abs(b.tree)
	if err != nil {
		fmt.Fprintln(os.Stderr, "xmitcheck:", err)
		return bisectAbort
	}
	b.tree = tree
	if *suites != "" {
		if err := os.Chdir(*suites); err != nil {
			fmt.Fprintln(os.Stderr, "xmitcheck: -C:", err)
			return bisectAbort
		}
	}
	s.v.kernels = listFlag{"build:bisect"} // checked by check(), named below
	if err := s.v.check(); err != nil {
		fmt.Fprintln(os.Stderr, "xmitcheck:", err)
		return bisectAbort
	}
	s.parseArgs(fs)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	built, err := kernels.Build(ctx, b.options())
	if err != nil {
		fmt.Fprintf(os.Stderr, "xmitcheck: bisect: cannot test this commit (exit %d): %v\n", bisectSkip, err)
		return bisectSkip
	}
	k, err := kernels.Resolve(ctx, "build:"+built.Name, kernels.Options{Progress: progress()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "xmitcheck: bisect: cannot test this commit (exit %d): %v\n", bisectSkip, err)
		return bisectSkip
	}
	builtAt := time.Now()
	runs, err := s.exec(ctx, []*kernels.Kernel{k})
	if err != nil {
		fmt.Fprintf(os.Stderr, "xmitcheck: bisect: cannot test this commit (exit %d): %v\n", bisectSkip, err)
		return bisectSkip
	}
	code, why := bisectExit(runs[0])
	fmt.Fprintf(os.Stderr, "xmitcheck: bisect: %s (exit %d; build %v, boot and tests %v)\n", why, code,
		builtAt.Sub(start).Round(time.Second), time.Since(builtAt).Round(time.Second))
	return code
}

// bisectExit maps one kernel's run to git bisect run's exit codes.
func bisectExit(r *results.Run) (int, string) {
	switch {
	case errors.Is(r.Err, vmtest.ErrNoBoot):
		return bisectSkip, "skip: " + r.Err.Error()
	case errors.Is(r.Err, vmtest.ErrCrash):
		return bisectBad, "bad: " + r.Err.Error()
	case r.Err != nil:
		return bisectSkip, "skip: " + r.Err.Error()
	}
	untestable := ""
	for _, v := range r.Verdicts {
		switch {
		case v.State == results.Error:
			untestable = fmt.Sprintf("%s could not be tested: %s", v.Seed, v.Why)
		case v.Mismatch():
			return bisectBad, fmt.Sprintf("bad: %s is %s, want %s: %s", v.Seed, v.State, v.Want, v.Why)
		}
	}
	if len(r.Misses) > 0 {
		m := r.Misses[0]
		return bisectBad, fmt.Sprintf("bad: feature %s missing (%s)", m.Feature, m.Probe)
	}
	if r.Failed() {
		return bisectBad, "bad: a test failed"
	}
	if untestable != "" {
		return bisectSkip, "skip: " + untestable
	}
	return bisectGood, "good: every verdict as expected"
}
