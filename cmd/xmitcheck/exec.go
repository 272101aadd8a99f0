package main

import (
	"bytes"
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
	// A boot or binary the emulator killed goes again, the second time
	// single-threaded (docs/verdicts.md). The binary's output so far is go
	// test's already: the next try prints it again from the start, and a
	// try in which a test had failed is not retried (its failure stands).
	for try := 1; err != nil && !s.failed && try < 3 && vmtest.Artefact(out, s.seen); try++ {
		what := "the boot"
		if s.started {
			what = "the binary (its output above is void; it runs again from the start)"
		}
		fmt.Fprintf(os.Stderr, "xmitcheck: the TCG int3 artefact, the emulator's, killed %s: booting again\n", what)
		s.splats, s.seen, s.started, s.line, job.SingleThreadTCG = 0, nil, false, s.line[:0], try == 2
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
	// failed: the binary printed a test's failure ("--- FAIL"); line is the
	// output's last line so far, which may be incomplete.
	failed bool
	line   []byte
}

func (s *passSink) Start(vmtest.Binary) { s.started = true }

func (s *passSink) Output(_ vmtest.Binary, p []byte) {
	os.Stdout.Write(p)
	for _, c := range p {
		if c != '\n' {
			s.line = append(s.line, c)
			continue
		}
		s.failed = s.failed || bytes.Contains(s.line, []byte("--- FAIL"))
		s.line = s.line[:0]
	}
}

func (s *passSink) Exit(_ vmtest.Binary, code int) { s.code = code }

func (s *passSink) Splat(sp vmtest.Splat) {
	s.splats++
	s.seen = append(s.seen, sp)
	fmt.Fprintf(os.Stderr, "xmitcheck: kernel %s:\n", sp.Kind)
	for _, l := range sp.Lines {
		fmt.Fprintln(os.Stderr, "   ", l)
	}
}
