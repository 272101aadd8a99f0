package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// PassThrough runs one test binary on k, unjudged, its output on stdout as
// it comes, and returns its exit code (go test -exec). A kernel splat
// makes it 1, a failed test's.
func (o *Options) PassThrough(ctx context.Context, k *kernels.Kernel, bin vmtest.Binary) (int, error) {
	dir, err := os.MkdirTemp("", "xmitcheck-exec-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	init, err := InitBinary(ctx, dir)
	if err != nil {
		return 0, err
	}
	b := o.NewBackend(k, init)
	s := &passSink{code: -1}
	job := o.job(k, []vmtest.Binary{bin}, false)
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
		return 1, nil
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
