package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

func cmdRun(args []string) (int, error) {
	fs := newFlags("run")
	var v vmFlags
	v.register(fs)
	runRE := fs.String("run", "", "run only tests matching this regexp (go test -run)")
	testTimeout := fs.Duration("test-timeout", 10*time.Minute, "per test binary timeout (go test -timeout)")
	ktap := fs.String("ktap", "", "write KTAP to this file (- for stdout)")
	jsonOut := fs.Bool("json", false, "print go test -json events, labelled with the kernel, on stdout")
	junit := fs.String("junit", "", "write JUnit XML to this file")
	verbose := fs.Bool("v", false, "print the tests' output as they run")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := v.check(); err != nil {
		return 0, err
	}
	pkgs := fs.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./suites/..."}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ks, err := v.resolve(ctx)
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "xmitcheck-run-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	testArgs := []string{"-test.v=test2json", "-test.count=1", "-test.timeout=" + testTimeout.String()}
	if *runRE != "" {
		testArgs = append(testArgs, "-test.run="+*runRE)
	}
	bins, err := buildTests(ctx, dir, pkgs, testArgs)
	if err != nil {
		return 0, err
	}
	init, err := initBinary(ctx, dir)
	if err != nil {
		return 0, err
	}

	// Human output goes to stderr when stdout carries JSON or KTAP.
	human := io.Writer(os.Stdout)
	var enc *json.Encoder
	if *jsonOut {
		enc = json.NewEncoder(os.Stdout)
		human = os.Stderr
	}
	if *ktap == "-" {
		human = os.Stderr
	}

	var runs []*results.Run
	crashed, broken := false, false
	for _, k := range ks {
		r, err := runOne(ctx, &v, k, init, bins, enc, *verbose, human)
		if err != nil && r == nil {
			return 0, err
		}
		runs = append(runs, r)
		crashed = crashed || errors.Is(r.Err, vmtest.ErrCrash)
		broken = broken || (r.Err != nil && !errors.Is(r.Err, vmtest.ErrCrash))
		if ctx.Err() != nil {
			break
		}
	}

	results.WriteSummary(human, runs)
	results.WriteVerdicts(human, runs)
	if err := writeReports(runs, *ktap, *junit); err != nil {
		return 0, err
	}
	failed := false
	for _, r := range runs {
		failed = failed || r.Failed() || r.Mismatched()
	}
	switch {
	case crashed:
		return exitCrashed, nil
	case broken:
		return exitInfra, nil
	case failed:
		return exitFail, nil
	}
	return exitOK, nil
}

// runOne runs the binaries on one kernel and judges the seeds against the
// kernel's expectation. A crash or hang is recorded in the returned Run
// (and fails its running test); an error with a nil Run means the run could
// not start.
func runOne(ctx context.Context, v *vmFlags, k *kernels.Kernel, init string, bins []vmtest.Binary, enc *json.Encoder, verbose bool, human io.Writer) (*results.Run, error) {
	e, source, err := v.expectation(k)
	if err != nil {
		return nil, err
	}
	b := v.newBackend(k, init)
	if p := progress(); p != nil {
		fmt.Fprintf(p, "xmitcheck: running %d test binaries on %s (%s backend)…\n", len(bins), k.Label(), b.Name())
	}
	s := &resultSink{run: results.NewRun(k.Label()), kernel: k.Label(), json: enc}
	if verbose {
		s.verbose = human
	}
	out, err := b.Run(ctx, k, v.job(k, bins, e), s)
	if s.err != nil {
		return nil, s.err
	}
	if out != nil {
		s.run.BootToFirstTest, s.run.Total = out.BootToFirstTest, out.Total
	}
	if err != nil && out != nil && len(out.Console) > 0 {
		s.run.AttachKernel("console at the end", out.Console)
	}
	s.run.Finish(err)
	s.run.Judge(e, source)
	if enc != nil {
		for _, ev := range s.run.VerdictEvents() {
			enc.Encode(ev)
		}
	}
	return s.run, nil
}

func writeReports(runs []*results.Run, ktap, junit string) error {
	if ktap != "" {
		if err := writeTo(ktap, func(w io.Writer) error { return results.WriteKTAP(w, runs) }); err != nil {
			return err
		}
	}
	if junit != "" {
		if err := writeTo(junit, func(w io.Writer) error { return results.WriteJUnit(w, runs) }); err != nil {
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
