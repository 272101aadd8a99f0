package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/perf/benchstat"

	"github.com/xmitcheck/xmitcheck/internal/host/cost"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// compareFlags are compare's own flags.
type compareFlags struct {
	base, patched             string
	expectBase, expectPatched string
	count                     int
	maxRegression             float64
	markdown, jsonFile        string
}

func (f *compareFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.base, "base", "", "the kernel without the change (catalog name, build:NAME or path)")
	fs.StringVar(&f.patched, "patched", "", "the kernel with the change")
	fs.StringVar(&f.expectBase, "expect-base", "", "what the base kernel must show (as --expect)")
	fs.StringVar(&f.expectPatched, "expect-patched", "", "what the patched kernel must show (as --expect)")
	fs.IntVar(&f.count, "count", 6,
		"interleaved rounds of benchmarks (a boot of the base, the patched kernel and the base again each)")
	fs.Float64Var(&f.maxRegression, "max-regression", 0,
		"exit 1 when a benchmark measure is worse on the patched kernel by more than this many percent, "+
			"beyond the A/A floor (0: judge only the seeds' claims)")
	fs.StringVar(&f.markdown, "markdown", "", "also write the comparison as Markdown (a mailing-list reply) to this file")
	fs.StringVar(&f.jsonFile, "json-file", "", "also write the comparison as JSON to this file")
}

// check refuses what compare cannot do, and names the kernels for s.
func (f *compareFlags) check(s *suiteRun) error {
	if f.base == "" || f.patched == "" {
		return usagef("compare: give --base KERNEL and --patched KERNEL")
	}
	if len(s.Kernels) > 0 {
		return usagef("compare: the kernels are --base and --patched, not --kernel")
	}
	if f.count < 3 {
		return usagef("compare: -count must be at least 3: an interval needs 3 rounds")
	}
	if f.maxRegression < 0 {
		return usagef("compare: --max-regression %g: give a percentage above 0", f.maxRegression)
	}
	s.Kernels = []string{f.base, f.patched}
	s.ExpectFor = map[string]string{f.base: f.expectBase, f.patched: f.expectPatched}
	return nil
}

// cmdCompare is the pre-merge check: the same suites on a base and a
// patched kernel, first the verdicts side by side and what changed, then
// the benchmarks in interleaved rounds, each a boot of the base, of the
// patched kernel and of the base again (the A/A floor) in an order that
// changes from round to round, so drift hits both alike; compared with
// benchstat, and judged (internal/host/cost): the seeds' claims made
// across kernels and, with --max-regression, every measure whose better
// way is known.
func cmdCompare(args []string) (int, error) {
	fs, s := suiteFlags("compare", "--base KERNEL --patched KERNEL [flags] [PKG...]",
		"Pre-merge check: the verdicts of both kernels side by side,\n"+
			"then the benchmarks interleaved, compared with benchstat.")
	var f compareFlags
	f.register(fs)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if err := f.check(s); err != nil {
		return 0, err
	}
	ctx, stop, ks, err := s.begin(fs, nil, output{"--markdown", f.markdown}, output{"--json-file", f.jsonFile})
	defer stop()
	if err != nil {
		return 0, err
	}
	// The verdicts come first, without benchmarks; the benchmarks (all of
	// them unless -bench says, "none" for none) after.
	bench := *s
	bench.RunRE, bench.KTAP, bench.JUnit, bench.JSON = "^$", "", "", false
	bench.Bench, bench.Benchtime = cmp.Or(s.Bench, "."), cmp.Or(s.Benchtime, "20000x")
	s.Bench = ""
	fmt.Printf("== verdicts: %s → %s\n", ks[0].Label(), ks[1].Label())
	runs, err := s.Exec(ctx, ks)
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
		Xmitcheck: runner.Version(),
		Suites:    s.SuitesRev,
	}
	writeDiff(os.Stdout, c)
	if bench.Bench != "none" {
		if err := bench.benchmarks(ctx, ks, &c, f); err != nil {
			return 0, err
		}
	}
	if err := f.write(c, runs); err != nil {
		return 0, err
	}
	return compareExit(c, runs), nil
}

// benchmarks runs the interleaved rounds of benchmarks, compares them with
// benchstat and judges the costs into c.
func (s *suiteRun) benchmarks(ctx context.Context, ks []*kernels.Kernel, c *comparison, f compareFlags) error {
	fmt.Printf("\n== benchmarks: %d interleaved rounds, -benchtime %s\n", f.count, s.Benchtime)
	out, err := s.BenchRounds(ctx, ks[0], ks[1], f.count)
	if err != nil {
		return err
	}
	col := &benchstat.Collection{Alpha: 0.05, DeltaTest: benchstat.UTest}
	col.AddConfig(c.Base, out.Lines[0])
	col.AddConfig(c.Patched, out.Lines[1])
	c.Tables = col.Tables()
	c.Benchmarks = rows(c.Tables)
	benchstat.FormatText(os.Stdout, c.Tables)
	c.Costs = cost.Across(out.Samples[0], out.Samples[2], out.Samples[1], out.Accel, f.maxRegression)
	fmt.Println()
	cost.WriteTable(os.Stdout, "judged (base, base again, patched)", c.Costs)
	return nil
}

// write writes the comparison to --markdown and --json-file.
func (f compareFlags) write(c comparison, runs []*results.Run) error {
	if f.markdown != "" {
		if err := runner.WriteTo(f.markdown, func(w io.Writer) error { return writeMarkdown(w, c, runs) }); err != nil {
			return err
		}
	}
	if f.jsonFile != "" {
		return runner.WriteTo(f.jsonFile, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		})
	}
	return nil
}

// compareExit is run's exit code, and exitFail for a cost that regressed
// (each printed).
func compareExit(c comparison, runs []*results.Run) int {
	code := runExit(runs)
	for _, r := range c.Costs {
		if r.Judgment == cost.Regressed {
			fmt.Printf("REGRESSED: %s %s\n", r.Package, r.Line())
			code = max(code, exitFail)
		}
	}
	return code
}

// comparison is what compare found, as its JSON file holds it.
type comparison struct {
	Base, Patched string
	// Xmitcheck and Suites say what ran, as every result does.
	Xmitcheck, Suites string
	Seeds             []results.VerdictChange
	Tests             []results.TestChange
	Benchmarks        []benchRow         `json:",omitempty"`
	Costs             []cost.Row         `json:",omitempty"`
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
	fmt.Fprintf(w, "%s changed status:\n", results.Count(len(c.Tests), "test"))
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
		fmt.Fprintf(w, "\n%s changed status:\n\n", results.Count(len(c.Tests), "test"))
		for _, t := range c.Tests {
			fmt.Fprintf(w, "- `%s`: %s → %s\n", t.Test, t.Base, t.Patched)
		}
	}
	if len(c.Costs) > 0 {
		fmt.Fprintln(w, "\nJudged, base against patched with the base booted twice for the A/A floor:")
		fmt.Fprintln(w)
		cost.WriteMarkdown(w, c.Costs)
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
