package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/perf/benchstat"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// cmdCompare is the pre-merge check: the same suites on a base and a
// patched kernel, first the verdicts side by side and what changed, then
// the benchmarks, interleaved base, patched, base, patched… so drift hits
// both alike, compared with benchstat.
func cmdCompare(args []string) (int, error) {
	fs := newFlags("compare", "--base KERNEL --patched KERNEL [flags] [PKG...]",
		"Pre-merge check: the verdicts of both kernels side by side,\n"+
			"then the benchmarks interleaved, compared with benchstat.")
	var s suiteRun
	s.register(fs)
	base := fs.String("base", "", "the kernel without the change (catalog name, build:NAME or path)")
	patched := fs.String("patched", "", "the kernel with the change")
	expectBase := fs.String("expect-base", "", "what the base kernel must show (as --expect)")
	expectPatched := fs.String("expect-patched", "", "what the patched kernel must show (as --expect)")
	count := fs.Int("count", 5, "interleaved rounds of benchmarks (one boot of each kernel per round)")
	markdown := fs.String("markdown", "", "also write the comparison as Markdown (a mailing-list reply) to this file")
	jsonFile := fs.String("json-file", "", "also write the comparison as JSON to this file")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if *base == "" || *patched == "" {
		return 0, usagef("compare: give --base KERNEL and --patched KERNEL")
	}
	if len(s.v.kernels) > 0 {
		return 0, usagef("compare: the kernels are --base and --patched, not --kernel")
	}
	if *count < 1 {
		return 0, usagef("compare: -count must be at least 1")
	}
	s.v.kernels = listFlag{*base, *patched}
	s.v.expectFor = map[string]string{*base: *expectBase, *patched: *expectPatched}
	if err := s.v.check(); err != nil {
		return 0, err
	}
	if err := s.checkOutputs(*markdown, *jsonFile); err != nil {
		return 0, err
	}
	s.parseArgs(fs)
	// The verdicts come first, without benchmarks; the benchmarks (all of
	// them unless -bench says, "none" for none) after.
	bench := s
	bench.runRE, bench.ktap, bench.junit, bench.json = "^$", "", "", false
	bench.bench, bench.benchtime = cmp.Or(s.bench, "."), cmp.Or(s.benchtime, "20000x")
	s.bench = ""
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ks, err := s.v.resolve(ctx)
	if err != nil {
		return 0, err
	}

	fmt.Printf("== verdicts: %s → %s\n", ks[0].Label(), ks[1].Label())
	runs, err := s.exec(ctx, ks)
	if err != nil {
		return 0, err
	}
	if len(runs) < 2 {
		return 0, ctx.Err()
	}
	c := comparison{
		Base:      runs[0].Kernel,
		Patched:   runs[1].Kernel,
		Seeds:     results.DiffVerdicts(runs[0], runs[1]),
		Tests:     results.DiffTests(runs[0], runs[1]),
		Xmitcheck: version(),
		Suites:    s.v.suitesRev,
	}
	writeDiff(os.Stdout, c)

	if bench.bench != "none" {
		fmt.Printf("\n== benchmarks: %d interleaved rounds, -benchtime %s\n", *count, bench.benchtime)
		out, err := bench.benchRounds(ctx, ks, *count)
		if err != nil {
			return 0, err
		}
		col := &benchstat.Collection{Alpha: 0.05, DeltaTest: benchstat.UTest}
		col.AddConfig(c.Base, out[0])
		col.AddConfig(c.Patched, out[1])
		c.Tables = col.Tables()
		c.Benchmarks = rows(c.Tables)
		benchstat.FormatText(os.Stdout, c.Tables)
	}
	if *markdown != "" {
		if err := writeTo(*markdown, func(w io.Writer) error { return writeMarkdown(w, c, runs) }); err != nil {
			return 0, err
		}
	}
	if *jsonFile != "" {
		if err := writeTo(*jsonFile, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		}); err != nil {
			return 0, err
		}
	}
	return runExit(runs), nil
}

// comparison is what compare found, as its JSON file holds it.
type comparison struct {
	Base, Patched string
	// Xmitcheck and Suites say what ran, as every result does.
	Xmitcheck, Suites string
	Seeds             []results.VerdictChange
	Tests             []results.TestChange
	Benchmarks        []benchRow         `json:",omitempty"`
	Tables            []*benchstat.Table `json:"-"`
}

// benchRow is one benchmark and unit of benchstat's tables: the values of
// each kernel (outliers removed), their means, and the change.
type benchRow struct {
	Benchmark, Unit     string
	Base, Patched       []float64
	BaseMean, PatchMean float64
	// Delta is benchstat's change ("-8.67%", or "~" when not
	// significant), Note its p-value and sample sizes.
	Delta, Note string
}

// rows flattens benchstat's tables for JSON.
func rows(tables []*benchstat.Table) []benchRow {
	var out []benchRow
	for _, t := range tables {
		for _, r := range t.Rows {
			if len(r.Metrics) < 2 {
				continue
			}
			out = append(out, benchRow{
				Benchmark: r.Benchmark, Unit: r.Metrics[0].Unit,
				Base: r.Metrics[0].RValues, Patched: r.Metrics[1].RValues,
				BaseMean: r.Metrics[0].Mean, PatchMean: r.Metrics[1].Mean,
				Delta: r.Delta, Note: r.Note,
			})
		}
	}
	return out
}

// benchRounds runs the benchmarks count times on each kernel, alternating,
// and returns each kernel's benchmark lines (go test's format).
func (s *suiteRun) benchRounds(ctx context.Context, ks []*kernels.Kernel, count int) ([][]byte, error) {
	bins, init, cleanup, err := s.binaries(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	out := make([][]byte, len(ks))
	// Benchmarks are timed: one VM, no other guest beside it.
	v := s.v
	v.vms = 1
	for round := 1; round <= count; round++ {
		for i, k := range ks {
			start := time.Now()
			r, err := runOne(ctx, &v, k, v.newBackend(k, init), bins, false, io.Discard)
			if err != nil {
				return nil, err
			}
			if r.Err != nil || r.Failed() {
				return nil, fmt.Errorf("benchmarks on %s, round %d: %v", k.Label(), round, firstProblem(r))
			}
			lines := r.BenchmarkLines()
			fmt.Fprintf(os.Stderr, "xmitcheck: round %d/%d on %s: %d benchmark results in %v\n",
				round, count, k.Label(), len(lines), time.Since(start).Round(time.Second))
			for _, l := range lines {
				out[i] = append(append(out[i], l...), '\n')
			}
		}
	}
	return out, nil
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

// writeDiff writes the verdicts side by side and every test whose status
// changed.
func writeDiff(w io.Writer, c comparison) {
	for _, v := range c.Seeds {
		mark := "  "
		if v.Base != v.Patched {
			mark = "→ "
		}
		fmt.Fprintf(w, "%s%-10s %s → %s\n", mark, v.Seed, v.Base, v.Patched)
	}
	if len(c.Tests) == 0 {
		fmt.Fprintln(w, "no test changed its status")
		return
	}
	fmt.Fprintf(w, "%d tests changed their status:\n", len(c.Tests))
	for _, t := range c.Tests {
		fmt.Fprintf(w, "  %s: %s → %s\n", t.Test, t.Base, t.Patched)
	}
}

// writeMarkdown writes the comparison as a mailing-list reply: the verdict
// table, the tests that changed, and the benchmark tables.
func writeMarkdown(w io.Writer, c comparison, runs []*results.Run) error {
	fmt.Fprintf(w, "xmitcheck compare: base %s, patched %s\n(%s; suites: %s)\n\n",
		c.Base, c.Patched, c.Xmitcheck, c.Suites)
	results.WriteVerdictsMarkdown(w, runs)
	if len(c.Tests) > 0 {
		fmt.Fprintf(w, "\n%d tests changed their status:\n\n", len(c.Tests))
		for _, t := range c.Tests {
			fmt.Fprintf(w, "- `%s`: %s → %s\n", t.Test, t.Base, t.Patched)
		}
	}
	for _, t := range c.Tables {
		fmt.Fprintf(w, "\n| %s | base | patched | Δ | |\n| --- | ---: | ---: | ---: | --- |\n", t.Metric)
		for _, r := range t.Rows {
			if len(r.Metrics) < 2 {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n",
				r.Benchmark, r.Metrics[0].Format(r.Scaler), r.Metrics[1].Format(r.Scaler), r.Delta, r.Note)
		}
	}
	return nil
}
