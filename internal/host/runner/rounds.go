package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/cost"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// Rounds is what the rounds of compare's benchmarks gave: per side (0
// base, 1 patched, 2 the base again) the benchmark lines (go test's
// format) and the parsed samples, in round order; and how the guests ran.
type Rounds struct {
	Lines   [3][]byte
	Samples [3][]cost.Sample
	Accel   string
}

// BenchRounds runs the benchmarks in count rounds, each a boot of the base
// (twice) and of the patched kernel, in the round's order of the sides
// (feature.SideOrders).
func (c *Config) BenchRounds(ctx context.Context, base, patched *kernels.Kernel, count int) (*Rounds, error) {
	bins, init, cleanup, err := c.Binaries(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	var out Rounds
	// Benchmarks are timed: one VM, no other guest beside it.
	o := c.Options
	o.VMs = 1
	side := map[string]int{feature.SideA: 0, feature.SideB: 1, feature.SideA2: 2}
	names := [3]string{"base", "patched", "base again"}
	for round := range count {
		for _, sd := range feature.SideOrders[round%len(feature.SideOrders)] {
			i, k := side[sd], base
			if sd == feature.SideB {
				k = patched
			}
			start := time.Now()
			r, err := o.RunOne(ctx, k, o.NewBackend(k, init), bins, false, io.Discard)
			if err != nil {
				return nil, err
			}
			if r.Err != nil || r.Failed() {
				return nil, fmt.Errorf("benchmarks on %s (%s), round %d: %v", k.Label(), names[i], round+1, firstProblem(r))
			}
			lines := r.BenchmarkLines()
			fmt.Fprintf(os.Stderr, "xmitcheck: round %d/%d, %s %s: %d benchmark results in %v\n",
				round+1, count, names[i], k.Label(), len(lines), time.Since(start).Round(time.Second))
			for _, l := range lines {
				out.Lines[i] = append(append(out.Lines[i], l...), '\n')
			}
			out.Samples[i] = append(out.Samples[i], r.BenchmarkSamples()...)
			out.Accel = r.Accel
		}
	}
	return &out, nil
}

// firstProblem says why a benchmark run is no good.
func firstProblem(r *results.Run) string {
	if r.Err != nil {
		return r.Err.Error()
	}
	var b bytes.Buffer
	results.WriteSummary(&b, []*results.Run{r})
	return b.String()
}
