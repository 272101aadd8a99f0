package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/cost"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// costFlags are run's cost pass: the seeds' cost claims measured on each
// kernel, in one boot, after its tests (docs/cost.md).
type costFlags struct {
	on        bool
	rounds    int
	benchtime string
}

func (c *costFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "cost", false, "also measure the seeds' cost claims on each kernel, A/B in one boot (docs/cost.md)")
	fs.IntVar(&c.rounds, "rounds", 10, "interleaved rounds of the cost pass (each runs A, A2 and B once)")
	fs.StringVar(&c.benchtime, "cost-benchtime", "100000x",
		"go test -benchtime of the cost pass: frames per side and round")
}

func (c *costFlags) check() error {
	if !c.on {
		return nil
	}
	if c.rounds < 3 {
		return usagef("--rounds %d: an interval needs 3 rounds at least", c.rounds)
	}
	if n, ok := strings.CutSuffix(c.benchtime, "x"); !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return usagef("--cost-benchtime %q: give a count of frames, such as 100000x", c.benchtime)
	}
	return nil
}

// costBinaries are the test binaries of bins that hold cost benchmarks,
// with the cost pass's arguments instead of the run's.
func (c *costFlags) costBinaries(bins []vmtest.Binary, testTimeout time.Duration) []vmtest.Binary {
	args := []string{"-test.v=test2json", "-test.run=^$", "-test.bench=" + cost.Benchmarks(false),
		"-test.benchtime=" + c.benchtime, "-test.count=1", "-test.timeout=" + testTimeout.String()}
	var out []vmtest.Binary
	for _, b := range bins {
		if slices.Contains(cost.Packages(false), results.ShortPackage(b.Name)) {
			b.Args = args
			out = append(out, b)
		}
	}
	return out
}

// costPass runs the cost benchmarks on k, in one VM alone (they are
// timed), and judges the claims they measure into r.Costs. A benchmark
// that failed leaves its rows unmeasured, and says so in r's notes; it
// changes no verdict.
func (s *suiteRun) costPass(ctx context.Context, k *kernels.Kernel, init string, bins []vmtest.Binary,
	r *results.Run, human io.Writer) error {
	cb := s.cost.costBinaries(bins, s.testTimeout)
	if len(cb) == 0 {
		r.Note("cost: no suite with a cost benchmark among the packages run (" +
			strings.Join(cost.Packages(false), ", ") + ")")
		return nil
	}
	v := s.v
	v.vms = 1
	// The rounds are a loop in the benchmarks (internal/guest/rounds).
	v.env = append(slices.Clone(v.env), feature.RoundsEnv+"="+strconv.Itoa(s.cost.rounds))
	start := time.Now()
	fmt.Fprintf(progress(), "xmitcheck: cost pass on %s: %d rounds, -benchtime %s…\n",
		k.Label(), s.cost.rounds, s.cost.benchtime)
	cr, err := runOne(ctx, &v, k, v.newBackend(k, init), cb, false, io.Discard)
	if err != nil {
		return err
	}
	if cr.Err != nil {
		r.Note(fmt.Sprintf("cost pass: %v", cr.Err))
	}
	for _, t := range cr.Tests {
		if t.Status == results.Fail {
			r.Note(fmt.Sprintf("cost pass: %s %s failed: %s", results.ShortPackage(t.Package), t.Name, t.Reason()))
		}
	}
	r.CostSamples = cr.BenchmarkSamples()
	r.Costs = cost.InBoot(r.CostSamples, cr.Accel)
	for i, c := range r.Costs {
		if c.Judgment == cost.Unmeasured {
			r.Costs[i].Why += sideReasons(cr, c)
		}
	}
	fmt.Fprintf(human, "xmitcheck: cost pass on %s: %d rows in %v\n",
		k.Label(), len(r.Costs), time.Since(start).Round(time.Second))
	return nil
}

// sideReasons says why the sides of c that did not end with a result
// skipped or failed, as their tests said.
func sideReasons(cr *results.Run, c cost.Row) string {
	var out []string
	for _, t := range cr.Tests {
		if results.ShortPackage(t.Package) != c.Package || !strings.HasPrefix(t.Name, c.Bench+"/side=") {
			continue
		}
		if t.Status == results.Skip || t.Status == results.Fail {
			out = append(out, fmt.Sprintf("%s %s: %s", t.Name, t.Status, t.Reason()))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

// costExit is exitFail when a cost row regressed.
func costExit(runs []*results.Run) int {
	for _, r := range runs {
		if r.CostRegressed() {
			return exitFail
		}
	}
	return exitOK
}
