package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// suiteRun is the flags of `run` (and `bisect`, `compare`, `matrix`,
// `bench profile`): a runner.Config.
type suiteRun struct{ runner.Config }

func (s *suiteRun) register(fs *flag.FlagSet) {
	registerVM(fs, &s.Options)
	fs.StringVar(&s.Suites, "C", "", checkoutUsage)
	fs.StringVar(&s.RunRE, "run", "", "run only tests matching this regexp (go test -run)")
	fs.StringVar(&s.Skip, "skip", "", "do not run tests matching this regexp (go test -skip)")
	fs.DurationVar(&s.TestTimeout, "test-timeout", 10*time.Minute, "per test binary timeout (go test -timeout)")
	fs.StringVar(&s.KTAP, "ktap", "", "write KTAP to this file (- for stdout)")
	fs.BoolVar(&s.JSON, "json", false, "print go test -json events, labelled with the kernel, on stdout")
	fs.StringVar(&s.JUnit, "junit", "", "write JUnit XML to this file")
	fs.StringVar(&s.Events, "events", "", "write the guests' go test -json events, before judging, to this file")
	fs.BoolVar(&s.Verbose, "v", false, "print the tests' output as they run")
	fs.IntVar(&s.VMs, "vms", 0, "VMs of each kernel that run its test binaries at once, dealt among them "+
		"(0: one per --cpus cores as far as memory allows; one with -v, vng or the host; matrix: one)")
	fs.StringVar(&s.Bench, "bench", "", "go test -bench: also run these benchmarks")
	fs.StringVar(&s.Benchtime, "benchtime", "", "go test -benchtime")
	fs.StringVar(&s.List, "list", "", "go test -list: list the tests, benchmarks and examples matching this regexp")
	fs.BoolVar(&s.Failfast, "failfast", false, "stop a seed's tests at its first failure, which makes it BROKEN: "+
		"its remaining tests are skipped, other seeds' go on (bisect always does)")
	fs.BoolVar(&s.Short, "short", false, "go test -short")
	fs.StringVar(&s.Shuffle, "shuffle", "", "go test -shuffle: off, on or a seed")
}

// output is a file a command writes, and the flag that names it.
type output struct{ flag, path string }

// checkOutputs makes sure every file the run will write can be written,
// that at most one stream goes to stdout, and that the suites can compile,
// before anything is built or booted.
func (s *suiteRun) checkOutputs(more ...output) error {
	if err := runner.CheckSuites(s.Suites); err != nil {
		return err
	}
	outs := append([]output{{"--ktap", s.KTAP}, {"--junit", s.JUnit}, {"--events", s.Events}}, more...)
	var stdout []string
	if s.JSON {
		stdout = append(stdout, "--json")
	}
	for _, o := range outs {
		if o.path == "-" {
			stdout = append(stdout, o.flag+" -")
		}
		if err := writable(o.path); err != nil {
			return err
		}
	}
	if n := len(stdout); n > 1 {
		both, rest := "both", "one"
		if n > 2 {
			both, rest = "all", "all but one"
		}
		return usagef("%s and %s %s write to stdout, where one stream fits: send %s to a file (e.g. %s FILE)",
			strings.Join(stdout[:n-1], ", "), stdout[n-1], both, rest, strings.TrimSuffix(stdout[n-1], " -"))
	}
	return nil
}

// writable reports whether a file can be created at path ("" and "-" can).
func writable(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usagef("cannot write %s: no directory %s", path, dir)
	}
	f, err := os.CreateTemp(dir, ".xmitcheck-check-")
	if err != nil {
		return usagef("cannot write %s: %v", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// parseArgs takes the packages from what follows the flags.
func (s *suiteRun) parseArgs(fs *flag.FlagSet) {
	s.Pkgs = fs.Args()
	if len(s.Pkgs) == 0 {
		s.Pkgs = []string{"./suites/..."}
	}
}

// begin is begin for a command that runs the suites: after the VM flags
// and after, the outputs checked (more are the command's own) and the
// packages taken from what follows the flags.
func (s *suiteRun) begin(fs *flag.FlagSet, after func() error, more ...output) (context.Context, func(),
	[]*kernels.Kernel, error) {
	return begin(&s.Options, func() error {
		if after != nil {
			if err := after(); err != nil {
				return err
			}
		}
		if err := s.checkOutputs(more...); err != nil {
			return err
		}
		s.parseArgs(fs)
		return nil
	})
}

func cmdRun(args []string) (int, error) {
	fs, s := suiteFlags("run", "[flags] [PKG...]", "Build the suites (default ./suites/...), boot each --kernel, run them\n"+
		"and judge one verdict per seed and kernel.")
	count := fs.Int("count", 1, "rounds per kernel, each on fresh boots; more than 1 is a soak (docs/verdicts.md)")
	registerCost(fs, &s.Cost)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := s.Cost.Check(); err != nil {
		return 0, err
	}
	ctx, stop, ks, err := s.begin(fs, func() error {
		if *count < 1 {
			return usagef("run: -count must be at least 1")
		}
		return nil
	})
	defer stop()
	if err != nil {
		return 0, err
	}
	if *count == 1 {
		runs, err := s.Exec(ctx, ks)
		if err != nil {
			return 0, err
		}
		if ctx.Err() != nil {
			return exitInfra, ctx.Err()
		}
		return max(runExit(runs), costExit(runs)), nil
	}
	return s.soak(ctx, ks, *count)
}

// soak runs count rounds on ks. Its reports hold every round, each named
// apart, written once with the rounds that finished.
func (s *suiteRun) soak(ctx context.Context, ks []*kernels.Kernel, count int) (int, error) {
	var rounds [][]*results.Run
	report := func() error { return s.WriteReports(slices.Concat(rounds...)) }
	for i := range count {
		fmt.Printf("== round %d of %d\n", i+1, count)
		s.Round = i + 1
		runs, err := s.Exec(ctx, ks)
		if err != nil {
			return 0, errors.Join(err, report())
		}
		rounds = append(rounds, runs)
		if ctx.Err() != nil {
			return exitInfra, errors.Join(ctx.Err(), report())
		}
	}
	if err := report(); err != nil {
		return 0, err
	}
	code := exitOK
	for _, runs := range rounds {
		code = max(code, runExit(runs))
	}
	if !results.WriteSoak(os.Stdout, rounds) {
		code = max(code, exitFail)
	}
	return code, nil
}

// runExit is run's exit code: a crash or hang first, then a run that could
// not finish, then a failed test or a verdict that differs from its
// expectation.
func runExit(runs []*results.Run) int {
	crashed, broken, failed := false, false, false
	for _, r := range runs {
		crashed = crashed || errors.Is(r.Err, vmtest.ErrCrash)
		broken = broken || (r.Err != nil && !errors.Is(r.Err, vmtest.ErrCrash))
		failed = failed || r.Failed() || r.Mismatched()
	}
	switch {
	case crashed:
		return exitCrashed
	case broken:
		return exitInfra
	case failed:
		return exitFail
	}
	return exitOK
}

// suiteFlags is the flag set of a command that runs the suites, the run's
// flags registered.
func suiteFlags(name, args, about string) (*flag.FlagSet, *suiteRun) {
	fs := newFlags(name, args, about)
	s := new(suiteRun)
	s.register(fs)
	return fs, s
}
