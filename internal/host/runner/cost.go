package runner

import (
	"context"
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

// Cost is the cost pass: the seeds' cost claims measured on each kernel,
// in one boot, after its tests (docs/cost.md).
type Cost struct {
	On bool
	// Rounds are the interleaved rounds (each runs A, A2 and B once).
	Rounds int
	// Benchtime is go test's -benchtime: frames per side and round.
	Benchtime string
}

// Check refuses a cost pass that cannot give an interval.
func (c *Cost) Check() error {
	if !c.On {
		return nil
	}
	if c.Rounds < 3 {
		return Usagef("--rounds %d: an interval needs 3 rounds at least", c.Rounds)
	}
	if n, ok := strings.CutSuffix(c.Benchtime, "x"); !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return Usagef("--cost-benchtime %q: give a count of frames, such as 100000x", c.Benchtime)
	}
	return nil
}

// binaries are the test binaries of bins that hold cost benchmarks, with
// the cost pass's arguments instead of the run's.
func (c *Cost) binaries(bins []vmtest.Binary, testTimeout time.Duration) []vmtest.Binary {
	args := []string{"-test.v=test2json", "-test.run=^$", "-test.bench=" + cost.Benchmarks(false),
		"-test.benchtime=" + c.Benchtime, "-test.count=1", "-test.timeout=" + testTimeout.String()}
	var out []vmtest.Binary
	for _, b := range bins {
		if slices.Contains(cost.Packages(false), results.ShortPackage(b.Name)) {
			b.Args = args
			out = append(out, b)
		}
	}
	return out
}

// CostPass runs the cost benchmarks on k, in one VM alone (they are
// timed), and judges the claims they measure into r.Costs. A benchmark
// that failed leaves its rows unmeasured, and says so in r's notes; it
// changes no verdict.
func (c *Config) CostPass(ctx context.Context, k *kernels.Kernel, init string, bins []vmtest.Binary,
	r *results.Run, human io.Writer) error {
	cb := c.Cost.binaries(bins, c.TestTimeout)
	if len(cb) == 0 {
		r.Note("cost: no suite with a cost benchmark among the packages run (" +
			strings.Join(cost.Packages(false), ", ") + ")")
		return nil
	}
	o := c.Options
	o.VMs = 1
	// The rounds are a loop in the benchmarks (internal/guest/rounds).
	o.Env = append(slices.Clone(o.Env), feature.RoundsEnv+"="+strconv.Itoa(c.Cost.Rounds))
	start := time.Now()
	fmt.Fprintf(Progress(), "xmitcheck: cost pass on %s: %d rounds, -benchtime %s…\n",
		k.Label(), c.Cost.Rounds, c.Cost.Benchtime)
	cr, err := o.RunOne(ctx, k, o.NewBackend(k, init), cb, false, io.Discard)
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
	for i, row := range r.Costs {
		if row.Judgment == cost.Unmeasured {
			r.Costs[i].Why += sideReasons(cr, row)
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
