package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// Config is a run of the suites (run, and bisect, compare, matrix and
// bench profile): build their test binaries, run them on each kernel,
// judge the seeds and report.
type Config struct {
	Options
	// Pkgs are the suites' packages (default ./suites/...).
	Pkgs []string
	// Suites is the checkout whose suites run ("": the current
	// directory's, else those built into xmitcheck).
	Suites string
	// go test's own flags, passed through to every binary.
	RunRE, Skip, Bench, Benchtime, Shuffle, List string
	TestTimeout                                  time.Duration
	Short                                        bool
	// Failfast stops a seed's tests at its first failure (feature.FailFastEnv).
	Failfast bool
	// The reports ("" for none, "-" for stdout), and JSON events on stdout.
	KTAP, JUnit, Events string
	JSON                bool
	// Verbose prints the tests' output as they run.
	Verbose bool
	// Cost is the cost pass (run --cost).
	Cost Cost
	// Round is the round of a soak (run -count N) that Exec runs, from
	// 1: its runs carry it, and the reports wait for every round.
	Round int
}

// testArgs are the arguments every test binary gets.
func (c *Config) testArgs() []string {
	args := []string{"-test.v=test2json", "-test.count=1", "-test.timeout=" + c.TestTimeout.String()}
	for _, f := range []struct{ name, value string }{
		{"run", c.RunRE}, {"skip", c.Skip}, {"bench", c.Bench}, {"benchtime", c.Benchtime},
		{"list", c.List}, {"shuffle", c.Shuffle},
	} {
		if f.value != "" {
			args = append(args, "-test."+f.name+"="+f.value)
		}
	}
	if c.Short {
		args = append(args, "-test.short")
	}
	return args
}

// Binaries builds the test binaries and the guest's init into a temporary
// directory that cleanup removes. Every run records which xmitcheck and
// which suites' source it used (SuitesRev).
func (c *Config) Binaries(ctx context.Context) (bins []vmtest.Binary, init string, cleanup func(), err error) {
	src, err := FindSuites(ctx, c.Suites)
	if err != nil {
		return nil, "", nil, err
	}
	c.SuitesRev = src.Rev
	dir, err := os.MkdirTemp("", "xmitcheck-run-")
	if err != nil {
		return nil, "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	if bins, err = BuildTests(ctx, src, dir, c.Pkgs, c.testArgs()); err == nil {
		init, err = InitBinary(ctx, dir)
	}
	if err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return bins, init, cleanup, nil
}

// Run resolves the kernels and runs the suites on them (Exec).
func (c *Config) Run(ctx context.Context) ([]*results.Run, error) {
	ks, err := c.Resolve(ctx)
	if err != nil {
		return nil, err
	}
	return c.Exec(ctx, ks)
}

// Exec runs the suites on ks and writes the summary, the verdicts and the
// reports. An error means nothing could be run.
func (c *Config) Exec(ctx context.Context, ks []*kernels.Kernel) ([]*results.Run, error) {
	c.autoVMs()
	if ff := feature.FailFastEnv + "=1"; c.Failfast && !slices.Contains(c.Env, ff) {
		c.Env = append(slices.Clone(c.Env), ff)
	}
	bins, init, cleanup, err := c.Binaries(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	// Human output goes to stderr when stdout carries JSON or KTAP.
	human := io.Writer(os.Stdout)
	if c.JSON || c.KTAP == "-" {
		human = os.Stderr
	}
	var runs []*results.Run
	for _, k := range ks {
		r, err := c.RunOne(ctx, k, c.NewBackend(k, init), bins, c.Verbose, human)
		if err != nil {
			return nil, err
		}
		r.Round = c.Round
		if c.Cost.On && ctx.Err() == nil {
			if err := c.CostPass(ctx, k, init, bins, r, human); err != nil {
				return nil, err
			}
		}
		runs = append(runs, r)
		if c.JSON {
			if err := results.WriteJSON(os.Stdout, []*results.Run{r}); err != nil {
				return nil, err
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	if c.List != "" {
		results.WriteList(human, runs)
	}
	results.WriteSummary(human, runs)
	results.WriteVerdicts(human, runs)
	results.WriteCosts(human, runs)
	if c.Round > 0 {
		return runs, nil
	}
	return runs, c.WriteReports(runs)
}

// WriteReports writes the run's KTAP, JUnit and events files.
func (c *Config) WriteReports(runs []*results.Run) error {
	return WriteReports(runs, Reports{KTAP: c.KTAP, JUnit: c.JUnit, Events: c.Events})
}

// RunOne runs the binaries on one kernel and judges the seeds against the
// kernel's expectation. The binaries are dealt among o.lanes VMs of the
// kernel that run at once (RunLane), and their records joined into one
// Run before the judge reads it. An error with a nil Run means the run
// could not start.
func (o *Options) RunOne(ctx context.Context, k *kernels.Kernel, b vmtest.Backend, bins []vmtest.Binary,
	verbose bool, human io.Writer) (*results.Run, error) {
	e, source, named, err := o.Expectation(k)
	if err != nil {
		return nil, err
	}
	lanes := o.lanes(k, len(bins))
	vms := ""
	if lanes > 1 {
		vms = fmt.Sprintf(", %d VMs at once", lanes)
	}
	fmt.Fprintf(Progress(), "xmitcheck: running %s on %s (%s backend%s)…\n",
		results.Count(len(bins), "test binary"), k.Label(), b.Name(), vms)
	var out io.Writer
	if verbose {
		out = human
	}
	run, errs, err := o.runLanes(ctx, k, b, bins, lanes, out)
	if err != nil {
		return nil, err
	}
	run.Name = k.Name
	for _, n := range run.Notes {
		fmt.Fprintln(human, "xmitcheck:", n)
	}
	if o.SuitesRev != "" {
		run.Note(about(o.SuitesRev)) // for the outputs; the terminal had it once, before the builds
	}
	if why, _ := o.missingModules(k); why != "" {
		run.Unloadable = why + ", and no --modules directory came with it"
	}
	Judge(ctx, run, errs, e, source, named...)
	return run, nil
}

// Judge ends a kernel's run and judges it: the tests still running when
// ctx ended are cancelled, every boot's error is kept (errors.Join, so a
// crash after an emulator artefact still says crash), and the seeds are
// judged against e.
func Judge(ctx context.Context, run *results.Run, errs []error, e expect.Expectation, source string,
	named ...feature.Seed) {
	if ctx.Err() != nil {
		run.Cancel()
	}
	run.Finish(errors.Join(errs...))
	run.Judge(e, source, named...)
}

// RunLane boots k for bins and records what they report in a Run of its
// own. A crash or hang fails the test that was running and does not hide
// the rest: the kernel boots again for the binaries not yet run. What the
// emulator killed goes by emulatorRetry. errs are the boots' failures; err
// means the lane could not record its results at all.
func (o *Options) RunLane(ctx context.Context, k *kernels.Kernel, b vmtest.Backend, bins []vmtest.Binary,
	verbose io.Writer, started time.Time) (run *results.Run, errs []error, err error) {
	s := &resultSink{run: results.NewRun(k.Label()), kernel: k.Label(), progress: Progress(), started: started,
		verbose: verbose, test2json: o.Test2JSON}
	defer s.heartbeat(30 * time.Second)()
	retry := newEmulatorRetry(s.run, k.Label())
	for queue := boots(bins); len(queue) > 0 && ctx.Err() == nil; {
		bt := queue[0]
		queue = queue[1:]
		s.newBoot()
		reports := len(s.run.Tests)
		job := o.job(k, bt.bins, true)
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

// Reports are the files a run writes ("" for none, "-" for stdout).
type Reports struct{ KTAP, JUnit, JSON, Events string }

// WriteReports writes runs to each file out names.
func WriteReports(runs []*results.Run, out Reports) error {
	for _, f := range []struct {
		path  string
		write func(io.Writer, []*results.Run) error
	}{
		{out.KTAP, results.WriteKTAP},
		{out.JUnit, results.WriteJUnit},
		{out.JSON, results.WriteJSON},
		{out.Events, results.WriteEvents},
	} {
		if f.path == "" {
			continue
		}
		if err := WriteTo(f.path, func(w io.Writer) error { return f.write(w, runs) }); err != nil {
			return err
		}
	}
	return nil
}

// WriteTo writes a report to stdout ("-") or to a file, atomically: a
// report is never left half-written.
func WriteTo(path string, write func(io.Writer) error) error {
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

// BootOnce boots k for bins once, unjudged, to measure the boot (bench
// boot). artefact says the emulator killed it (vmtest.Artefact): the boot
// measured nothing, and may go again.
func (o *Options) BootOnce(ctx context.Context, k *kernels.Kernel, b vmtest.Backend, bins []vmtest.Binary) (
	out *vmtest.Outcome, artefact bool, err error) {
	s := &resultSink{run: results.NewRun(k.Label())}
	out, err = b.Run(ctx, k, o.job(k, bins, false), s)
	return out, err != nil && vmtest.Artefact(out, s.splats), err
}
