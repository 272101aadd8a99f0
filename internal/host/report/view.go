package report

import (
	"cmp"
	"slices"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// view is what both writers show, worked out once from the snapshots.
type view struct {
	Kernels []kernel
	Seeds   []seedRow
	Tests   []testRow
	// Benchmarks tells whether any kernel has benchmark lines; Charts are
	// those in a unit of metrics, BenchProblems the lines benchfmt could
	// not read.
	Benchmarks    bool
	Charts        []*benchChart
	BenchProblems []string
	// Mismatches counts the verdict cells that differ from their
	// expectation.
	Mismatches int
}

// kernel is one snapshot and what the tables show of it.
type kernel struct {
	results.Snapshot
	// Short names the kernel in column heads: what was asked for
	// ("debian:7.3"), else the label.
	Short                   string
	Pass, Fail, Skip, XFail int
}

// seedRow is one seed's verdicts, a cell per kernel.
type seedRow struct {
	Seed  feature.Seed
	Title string
	Cells []verdictCell
}

type verdictCell struct {
	results.Verdict
	// Tested is false where the kernel has no verdict for the seed.
	Tested bool
}

// testRow is one leaf test's status on each kernel.
type testRow struct {
	// Name is "suites/tun.TestA/sub".
	Name  string
	Cells []testCell
}

type testCell struct {
	results.SnapshotTest
	// Ran is false where the kernel did not run the test.
	Ran bool
}

func newView(snaps []results.Snapshot) view {
	var v view
	for _, s := range snaps {
		k := kernel{Snapshot: s, Short: cmp.Or(s.Name, s.Kernel)}
		for _, t := range s.Tests {
			switch t.Status {
			case results.Pass:
				k.Pass++
			case results.Fail:
				k.Fail++
			case results.Skip:
				k.Skip++
			case results.XFail:
				k.XFail++
			}
		}
		v.Kernels = append(v.Kernels, k)
		v.Benchmarks = v.Benchmarks || len(s.Benchmarks) > 0
	}

	// Seeds in table order, then any this build does not know.
	var seeds []feature.Seed
	titles := map[feature.Seed]string{}
	for _, s := range feature.Seeds {
		seeds = append(seeds, s.Seed)
		titles[s.Seed] = s.Title
	}
	for _, s := range snaps {
		for _, vd := range s.Verdicts {
			if !slices.Contains(seeds, vd.Seed) {
				seeds = append(seeds, vd.Seed)
			}
		}
	}
	for _, seed := range seeds {
		row, any := seedRow{Seed: seed, Title: titles[seed]}, false
		for _, s := range snaps {
			c := verdictCell{}
			if i := slices.IndexFunc(s.Verdicts, func(vd results.Verdict) bool { return vd.Seed == seed }); i >= 0 {
				c = verdictCell{Verdict: s.Verdicts[i], Tested: true}
				any = true
				if c.Mismatch() {
					v.Mismatches++
				}
			}
			row.Cells = append(row.Cells, c)
		}
		if any {
			v.Seeds = append(v.Seeds, row)
		}
	}

	// Tests in the order the kernels ran them, first kernel first.
	index := map[string]int{}
	for k, s := range snaps {
		for _, t := range s.Tests {
			name := t.Package + "." + t.Name
			i, ok := index[name]
			if !ok {
				i = len(v.Tests)
				index[name] = i
				v.Tests = append(v.Tests, testRow{Name: name, Cells: make([]testCell, len(snaps))})
			}
			v.Tests[i].Cells[k] = testCell{SnapshotTest: t, Ran: true}
		}
	}

	// Failed tests first, the rest in the order they ran.
	slices.SortStableFunc(v.Tests, func(a, b testRow) int {
		return cmp.Compare(rank(!a.failed()), rank(!b.failed()))
	})

	v.Charts, v.BenchProblems = benchmarks(snaps)
	return v
}

func rank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// failed reports whether the test failed on any kernel.
func (t testRow) failed() bool {
	return slices.ContainsFunc(t.Cells, func(c testCell) bool { return c.Ran && c.Status == results.Fail })
}

// passed reports whether the test passed on every kernel that ran it.
func (t testRow) passed() bool {
	return !slices.ContainsFunc(t.Cells, func(c testCell) bool { return c.Ran && c.Status != results.Pass })
}

// pkg is the test's package, "suites/tun".
func (t testRow) pkg() string {
	for _, c := range t.Cells {
		if c.Ran {
			return c.Package
		}
	}
	return ""
}

// Text is what a verdict cell shows: the verdict, or "—" where the seed
// was not tested.
func (c verdictCell) Text() string {
	if !c.Tested {
		return "—"
	}
	return string(c.State)
}

// Class is the cell's CSS class: its state, and "mismatch" where it
// differs from the expectation.
func (c verdictCell) Class() string {
	switch {
	case !c.Tested:
		return "untested"
	case c.Mismatch():
		return "v-" + string(c.State) + " mismatch"
	}
	return "v-" + string(c.State)
}

// Text is what a test cell shows: the status, or "—" where the test did
// not run.
func (c testCell) Text() string {
	if !c.Ran {
		return "—"
	}
	return string(c.Status)
}

// Class is the cell's CSS class: its status.
func (c testCell) Class() string {
	if !c.Ran {
		return "untested"
	}
	return "t-" + string(c.Status)
}

// Took is the test's duration as the tables show it.
func (c testCell) Took() string {
	if !c.Ran {
		return ""
	}
	return dur(c.Elapsed)
}
