package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// suiteRun is what `run` (and `bisect`, `compare`) do with kernels: build
// the suites' test binaries, run them on each kernel, judge the seeds and
// report.
type suiteRun struct {
	v           vmFlags
	runRE       string
	testTimeout time.Duration
	ktap, junit string
	events      string
	json        bool
	verbose     bool
	pkgs        []string
	// suites is -C: the checkout whose suites run ("": the current
	// directory's, else those built into xmitcheck).
	suites string
	// go test's own flags, passed through to every binary.
	skip                      string
	bench, benchtime, shuffle string
	list                      string
	failfast, short           bool
	// cost is the cost pass (run --cost).
	cost costFlags
	// round is the round of a soak (run -count N) that exec runs, from
	// 1: its runs carry it, and the reports wait for every round.
	round int
}

func (s *suiteRun) register(fs *flag.FlagSet) {
	s.v.register(fs)
	fs.StringVar(&s.suites, "C", "", checkoutUsage)
	fs.StringVar(&s.runRE, "run", "", "run only tests matching this regexp (go test -run)")
	fs.StringVar(&s.skip, "skip", "", "do not run tests matching this regexp (go test -skip)")
	fs.DurationVar(&s.testTimeout, "test-timeout", 10*time.Minute, "per test binary timeout (go test -timeout)")
	fs.StringVar(&s.ktap, "ktap", "", "write KTAP to this file (- for stdout)")
	fs.BoolVar(&s.json, "json", false, "print go test -json events, labelled with the kernel, on stdout")
	fs.StringVar(&s.junit, "junit", "", "write JUnit XML to this file")
	fs.StringVar(&s.events, "events", "", "write the guests' go test -json events, before judging, to this file")
	fs.BoolVar(&s.verbose, "v", false, "print the tests' output as they run")
	fs.IntVar(&s.v.vms, "vms", 0, "VMs of each kernel that run its test binaries at once, dealt among them "+
		"(0: one per --cpus cores as far as memory allows; one with -v, vng or the host; matrix: one)")
	fs.StringVar(&s.bench, "bench", "", "go test -bench: also run these benchmarks")
	fs.StringVar(&s.benchtime, "benchtime", "", "go test -benchtime")
	fs.StringVar(&s.list, "list", "", "go test -list: list the tests, benchmarks and examples matching this regexp")
	fs.BoolVar(&s.failfast, "failfast", false, "stop a seed's tests at its first failure, which makes it BROKEN: "+
		"its remaining tests are skipped, other seeds' go on (bisect always does)")
	fs.BoolVar(&s.short, "short", false, "go test -short")
	fs.StringVar(&s.shuffle, "shuffle", "", "go test -shuffle: off, on or a seed")
}

// testArgs are the arguments every test binary gets.
func (s *suiteRun) testArgs() []string {
	args := []string{"-test.v=test2json", "-test.count=1", "-test.timeout=" + s.testTimeout.String()}
	for _, f := range []struct{ name, value string }{
		{"run", s.runRE}, {"skip", s.skip}, {"bench", s.bench}, {"benchtime", s.benchtime},
		{"list", s.list}, {"shuffle", s.shuffle},
	} {
		if f.value != "" {
			args = append(args, "-test."+f.name+"="+f.value)
		}
	}
	if s.short {
		args = append(args, "-test.short")
	}
	return args
}

// output is a file a command writes, and the flag that names it.
type output struct{ flag, path string }

// checkOutputs makes sure every file the run will write can be written,
// that at most one stream goes to stdout, and that the suites can compile,
// before anything is built or booted.
func (s *suiteRun) checkOutputs(more ...output) error {
	if err := checkSuites(s.suites); err != nil {
		return err
	}
	outs := append([]output{{"--ktap", s.ktap}, {"--junit", s.junit}, {"--events", s.events}}, more...)
	var stdout []string
	if s.json {
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
	s.pkgs = fs.Args()
	if len(s.pkgs) == 0 {
		s.pkgs = []string{"./suites/..."}
	}
}

// binaries builds the test binaries and the guest's init into a temporary
// directory that cleanup removes. Every run records which xmitcheck and
// which suites' source it used (s.v.suitesRev).
func (s *suiteRun) binaries(ctx context.Context) (bins []vmtest.Binary, init string, cleanup func(), err error) {
	src, err := findSuites(ctx, s.suites)
	if err != nil {
		return nil, "", nil, err
	}
	s.v.suitesRev = src.rev
	dir, err := os.MkdirTemp("", "xmitcheck-run-")
	if err != nil {
		return nil, "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	if bins, err = buildTests(ctx, src, dir, s.pkgs, s.testArgs()); err == nil {
		init, err = initBinary(ctx, dir)
	}
	if err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return bins, init, cleanup, nil
}

// exec runs the suites on ks and writes the summary, the verdicts and the
// reports. An error means nothing could be run.
func (s *suiteRun) exec(ctx context.Context, ks []*kernels.Kernel) ([]*results.Run, error) {
	s.autoVMs()
	if ff := feature.FailFastEnv + "=1"; s.failfast && !slices.Contains(s.v.env, ff) {
		s.v.env = append(slices.Clone(s.v.env), ff)
	}
	bins, init, cleanup, err := s.binaries(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	// Human output goes to stderr when stdout carries JSON or KTAP.
	human := io.Writer(os.Stdout)
	if s.json || s.ktap == "-" {
		human = os.Stderr
	}
	var runs []*results.Run
	for _, k := range ks {
		r, err := runOne(ctx, &s.v, k, s.v.newBackend(k, init), bins, s.verbose, human)
		if err != nil {
			return nil, err
		}
		r.Round = s.round
		if s.cost.on && ctx.Err() == nil {
			if err := s.costPass(ctx, k, init, bins, r, human); err != nil {
				return nil, err
			}
		}
		runs = append(runs, r)
		if s.json {
			if err := results.WriteJSON(os.Stdout, []*results.Run{r}); err != nil {
				return nil, err
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	if s.list != "" {
		results.WriteList(human, runs)
	}
	results.WriteSummary(human, runs)
	results.WriteVerdicts(human, runs)
	results.WriteCosts(human, runs)
	if s.round > 0 {
		return runs, nil
	}
	return runs, s.writeReports(runs)
}

func (s *suiteRun) writeReports(runs []*results.Run) error {
	return writeReports(runs, reports{ktap: s.ktap, junit: s.junit, events: s.events})
}

func cmdRun(args []string) (int, error) {
	fs := newFlags("run", "[flags] [PKG...]", "Build the suites (default ./suites/...), boot each --kernel, run them\n"+
		"and judge one verdict per seed and kernel.")
	var s suiteRun
	s.register(fs)
	count := fs.Int("count", 1, "rounds per kernel, each on fresh boots; more than 1 is a soak (docs/verdicts.md)")
	s.cost.register(fs)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := s.cost.check(); err != nil {
		return 0, err
	}
	if err := s.v.check(); err != nil {
		return 0, err
	}
	if *count < 1 {
		return 0, usagef("run: -count must be at least 1")
	}
	if err := s.checkOutputs(); err != nil {
		return 0, err
	}
	s.parseArgs(fs)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ks, err := s.v.resolve(ctx)
	if err != nil {
		return 0, err
	}
	if *count == 1 {
		runs, err := s.exec(ctx, ks)
		if err != nil {
			return 0, err
		}
		if ctx.Err() != nil {
			return exitInfra, ctx.Err()
		}
		return max(runExit(runs), costExit(runs)), nil
	}
	// A soak's reports hold every round, each named apart, written once
	// with the rounds that finished.
	var rounds [][]*results.Run
	report := func() error { return s.writeReports(slices.Concat(rounds...)) }
	for i := range *count {
		fmt.Printf("== round %d of %d\n", i+1, *count)
		s.round = i + 1
		runs, err := s.exec(ctx, ks)
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

// runOne runs the binaries on one kernel and judges the seeds against the
// kernel's expectation. The binaries are dealt among v.lanes VMs of the
// kernel that run at once (runLane), and their records joined into one
// Run before the judge reads it. Every error is kept (errors.Join), so a
// crash after an emulator artefact still says crash. An error with a nil
// Run means the run could not start.
func runOne(ctx context.Context, v *vmFlags, k *kernels.Kernel, b vmtest.Backend, bins []vmtest.Binary,
	verbose bool, human io.Writer) (*results.Run, error) {
	e, source, named, err := v.expectation(k)
	if err != nil {
		return nil, err
	}
	lanes := v.lanes(k, len(bins))
	vms := ""
	if lanes > 1 {
		vms = fmt.Sprintf(", %d VMs at once", lanes)
	}
	fmt.Fprintf(progress(), "xmitcheck: running %s on %s (%s backend%s)…\n",
		results.Count(len(bins), "test binary"), k.Label(), b.Name(), vms)
	var out io.Writer
	if verbose {
		out = human
	}
	run, errs, err := runLanes(ctx, v, k, b, bins, lanes, out)
	if err != nil {
		return nil, err
	}
	run.Name = k.Name
	for _, n := range run.Notes {
		fmt.Fprintln(human, "xmitcheck:", n)
	}
	if v.suitesRev != "" {
		run.Note(about(v.suitesRev)) // for the outputs; the terminal had it once, before the builds
	}
	if ctx.Err() != nil {
		run.Cancel()
	}
	if why, _ := v.missingModules(k); why != "" {
		run.Unloadable = why + ", and no --modules directory came with it"
	}
	run.Finish(errors.Join(errs...))
	run.Judge(e, source, named...)
	return run, nil
}

// runLane boots k for bins and records what they report in a Run of its
// own. A crash or hang fails the test that was running and does not hide
// the rest: the kernel boots again for the binaries not yet run. What the
// emulator killed goes by emulatorRetry. errs are the boots' failures; err
// means the lane could not record its results at all.
func runLane(ctx context.Context, v *vmFlags, k *kernels.Kernel, b vmtest.Backend, bins []vmtest.Binary,
	verbose io.Writer, started time.Time) (run *results.Run, errs []error, err error) {
	s := &resultSink{run: results.NewRun(k.Label()), kernel: k.Label(), progress: progress(), started: started,
		verbose: verbose, test2json: v.test2json}
	defer s.heartbeat(30 * time.Second)()
	retry := newEmulatorRetry(s.run, k.Label())
	for queue := boots(bins); len(queue) > 0 && ctx.Err() == nil; {
		bt := queue[0]
		queue = queue[1:]
		s.newBoot()
		reports := len(s.run.Tests)
		job := v.job(k, bt.bins, true)
		job.SingleThreadTCG = bt.single
		out, err := b.Run(ctx, k, job, s)
		s.endBoot()
		if s.err != nil {
			return nil, nil, s.err
		}
		if out != nil {
			s.run.AddBoot(out.BootToFirstTest, out.Total, out.Accel)
		}
		if err == nil {
			continue
		}
		crashed := s.running
		left := slices.DeleteFunc(slices.Clone(bt.bins), func(bin vmtest.Binary) bool { return s.exited[bin.Name] })
		if vmtest.Artefact(out, s.splats) && len(left) > 0 && ctx.Err() == nil {
			s.run.DropKernelReports(reports)
			next, err := retry.after(left, crashed != "")
			if err != nil {
				errs = append(errs, err)
			}
			queue = append(next, queue...)
			continue
		}
		s.attachConsole(crashed, out, err)
		errs = append(errs, err)
		if !errors.Is(err, vmtest.ErrCrash) || crashed == "" {
			break
		}
		if rest := left[1:]; len(rest) > 0 {
			s.run.Note(fmt.Sprintf("%s: %v; booting again for the %s not yet run", k.Label(), err,
				results.Count(len(rest), "test binary")))
			queue = append(boots(rest), queue...)
		}
	}
	return s.run, errs, nil
}

// reports are the files a run writes ("" for none, "-" for stdout).
type reports struct{ ktap, junit, json, events string }

func writeReports(runs []*results.Run, out reports) error {
	for _, f := range []struct {
		path  string
		write func(io.Writer, []*results.Run) error
	}{
		{out.ktap, results.WriteKTAP},
		{out.junit, results.WriteJUnit},
		{out.json, results.WriteJSON},
		{out.events, results.WriteEvents},
	} {
		if f.path == "" {
			continue
		}
		if err := writeTo(f.path, func(w io.Writer) error { return f.write(w, runs) }); err != nil {
			return err
		}
	}
	return nil
}

// writeTo writes a report to stdout ("-") or to a file, atomically: a
// report is never left half-written.
func writeTo(path string, write func(io.Writer) error) error {
	if path == "-" {
		return write(os.Stdout)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
