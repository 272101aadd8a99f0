package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/xmitcheck/xmitcheck/vmtest"
)

// cmdExec runs one test binary on one kernel and passes its output and exit
// code through, so that `go test -exec 'xmitcheck exec --kernel K'` works.
func cmdExec(args []string) (int, error) {
	fs := newFlags("exec", "[flags] BINARY [ARGS...]",
		"Run one test binary in a VM and pass its output and exit code through:\n"+
			"  go test -exec 'xmitcheck exec --kernel debian:7.3' ./suites/tun")
	var v vmFlags
	v.register(fs)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := v.check(); err != nil {
		return 0, err
	}
	if v.expect != "" {
		return 0, usagef(
			"exec: --expect is for run, matrix, compare and bisect: exec passes the binary's own pass or fail through, unjudged")
	}
	if fs.NArg() == 0 {
		return 0, usagef("exec: no binary given: use go test -exec 'xmitcheck exec --kernel %s' PKG", v.kernels[0])
	}
	if len(v.kernels) != 1 {
		return 0, usagef("exec runs on exactly one kernel, got %d (%s)", len(v.kernels), v.kernels.String())
	}
	path, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return 0, err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ks, err := v.resolve(ctx)
	if err != nil {
		return 0, err
	}
	k := ks[0]
	dir, err := os.MkdirTemp("", "xmitcheck-exec-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	init, err := initBinary(ctx, dir)
	if err != nil {
		return 0, err
	}
	b := v.newBackend(k, init)
	s := &passSink{code: -1}
	// go test runs the binary in its package's directory: the sources
	// there go into the guest too, where gotest.tools reads a failed
	// assertion's expression from them.
	wd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	srcs, err := filepath.Glob(filepath.Join(wd, "*.go"))
	if err != nil {
		return 0, err
	}
	bin := vmtest.Binary{Name: filepath.Base(path), Path: path, Args: fs.Args()[1:], Sources: srcs}
	job := v.job(k, []vmtest.Binary{bin}, false)
	out, err := b.Run(ctx, k, job, s)
	// A boot the emulator killed before the binary started goes again,
	// the second time single-threaded (docs/verdicts.md); once the binary
	// has started, its output is go test's already and cannot be retried.
	for try := 1; err != nil && !s.started && try < 3 && vmtest.Artefact(out, s.seen); try++ {
		fmt.Fprintln(os.Stderr, "xmitcheck: the boot died of the TCG int3 artefact, the emulator's: booting again")
		s.splats, s.seen, job.SingleThreadTCG = 0, nil, try == 2
		out, err = b.Run(ctx, k, job, s)
	}
	if err != nil {
		if out != nil {
			for _, l := range out.Console {
				fmt.Fprintln(os.Stderr, "console:", l)
			}
		}
		return 0, fmt.Errorf("%s: %w", k.Label(), err)
	}
	if s.splats > 0 {
		return exitFail, nil
	}
	if s.code < 0 {
		return 0, fmt.Errorf("%s: the binary never reported its exit status", k.Label())
	}
	return s.code, nil
}

// passSink writes the binary's output as it comes and keeps its exit code;
// a kernel splat is printed on stderr and fails the run.
type passSink struct {
	code    int
	splats  int
	seen    []vmtest.Splat
	started bool
}

func (s *passSink) Start(vmtest.Binary) { s.started = true }

func (s *passSink) Output(_ vmtest.Binary, p []byte) { os.Stdout.Write(p) }

func (s *passSink) Exit(_ vmtest.Binary, code int) { s.code = code }

func (s *passSink) Splat(sp vmtest.Splat) {
	s.splats++
	s.seen = append(s.seen, sp)
	fmt.Fprintf(os.Stderr, "xmitcheck: kernel %s:\n", sp.Kind)
	for _, l := range sp.Lines {
		fmt.Fprintln(os.Stderr, "   ", l)
	}
}
