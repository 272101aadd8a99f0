package results

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// TestProfile is where a test's time went: the profile lines of the test
// and of its subtests summed (each line holds only its own test's time),
// against the time go test gave the test.
type TestProfile struct {
	Package, Name string
	// Total is the test's elapsed time, subtests and cleanups included.
	Total time.Duration
	feature.Profile
	// Lines is how many profile lines were summed: 0 where no helper
	// the profile knows ran.
	Lines int
}

// Other is the time no kind accounts for: the test's own code, sleeps,
// helpers that are not marked.
func (p TestProfile) Other() time.Duration { return max(0, p.Total-p.Sum()) }

// Profiles is the profile of every test of the run that ended, each with
// its subtests' lines included, in the run's order.
func (r *Run) Profiles() []TestProfile {
	var out []TestProfile
	at := map[string]int{}
	tests := map[string]*Test{}
	for _, t := range r.Tests {
		if t.Name == "" || !t.done {
			continue
		}
		at[key(t.Package, t.Name)] = len(out)
		tests[key(t.Package, t.Name)] = t
		out = append(out, TestProfile{Package: t.Package, Name: t.Name, Total: t.Elapsed})
	}
	for _, t := range r.Tests {
		var own feature.Profile
		lines := 0
		for _, l := range t.Output {
			if p, ok := feature.ParseProfile(l); ok {
				own, lines = own.Add(p), lines+1
			}
		}
		if lines == 0 {
			continue
		}
		// The test and each of its ancestors: a test named like one
		// ("All" before "All/Hash", both subtests of one test) is one
		// only when t ran within it.
		for name := t.Name; ; {
			k := key(t.Package, name)
			if i, ok := at[k]; ok && within(t, tests[k]) {
				out[i].Profile, out[i].Lines = out[i].Profile.Add(own), out[i].Lines+lines
			}
			i := strings.LastIndex(name, "/")
			if i < 0 {
				break
			}
			name = name[:i]
		}
	}
	return out
}

// within reports whether t ran while p did (t is p included).
func within(t, p *Test) bool {
	return !t.Started.Before(p.Started) && !t.Ended.After(p.Ended)
}

// WriteProfile writes, per kernel, a table of where the tests' time went:
// per suite, one row per top-level test, the longest first, each followed
// by its subtests longest first down to the subtests-th, then the suite's
// total and each kind's share of it; then all suites'. Times in seconds.
func WriteProfile(w io.Writer, runs []*Run, subtests int) {
	for i, r := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var rows []profileRow
		all := r.Profiles()
		top := slices.DeleteFunc(slices.Clone(all), func(p TestProfile) bool { return strings.Contains(p.Name, "/") })
		byPkg := map[string][]TestProfile{}
		var pkgs []string
		sums := map[string]TestProfile{}
		for _, p := range top {
			if _, ok := byPkg[p.Package]; !ok {
				pkgs = append(pkgs, p.Package)
			}
			byPkg[p.Package] = append(byPkg[p.Package], p)
			sums[p.Package] = addProfile(sums[p.Package], p)
		}
		slices.SortStableFunc(pkgs, func(a, b string) int { return cmp.Compare(sums[b].Total, sums[a].Total) })
		var total TestProfile
		for _, pkg := range pkgs {
			short := ShortPackage(pkg)
			tests := byPkg[pkg]
			slices.SortStableFunc(tests, byTotal)
			for _, p := range tests {
				rows = append(rows, profileRow{short + " " + p.Name, p, false})
				var subs []TestProfile
				for _, s := range all {
					if s.Package == pkg && strings.HasPrefix(s.Name, p.Name+"/") {
						subs = append(subs, s)
					}
				}
				slices.SortStableFunc(subs, byTotal)
				for _, s := range subs[:min(subtests, len(subs))] {
					rows = append(rows, profileRow{"  " + s.Name, s, false})
				}
			}
			rows = append(rows, profileRow{short + " (all tests)", sums[pkg], false},
				profileRow{short + " (share)", sums[pkg], true})
			total = addProfile(total, sums[pkg])
		}
		if len(pkgs) > 1 {
			rows = append(rows, profileRow{"all suites", total, false}, profileRow{"all suites (share)", total, true})
		}
		fmt.Fprintf(w, "%s: seconds per test in setup, traffic, waits, teardown and other\n", r.Kernel)
		width := len("test")
		for _, row := range rows {
			width = max(width, len(row.name))
		}
		fmt.Fprintf(w, "  %-*s %8s %8s %8s %8s %8s %8s\n", width, "test", "total", "setup", "traffic", "waits",
			"teardown", "other")
		for _, row := range rows {
			fmt.Fprintf(w, "  %-*s", width, row.name)
			p := row.p
			for _, d := range []time.Duration{p.Total, p.Setup, p.Traffic, p.Waits, p.Teardown, p.Other()} {
				switch {
				case !row.share:
					fmt.Fprintf(w, " %8.2f", d.Seconds())
				case p.Total > 0:
					fmt.Fprintf(w, " %7.0f%%", 100*float64(d)/float64(p.Total))
				default:
					fmt.Fprintf(w, " %8s", "-")
				}
			}
			fmt.Fprintln(w)
		}
		if total.Lines == 0 {
			fmt.Fprintln(w, "  no test printed a profile line (binaries from before internal/guest/profile?): all is other")
		}
	}
}

// profileRow is one row of WriteProfile's table; share rows show each
// kind as a share of the total.
type profileRow struct {
	name  string
	p     TestProfile
	share bool
}

func byTotal(a, b TestProfile) int { return cmp.Compare(b.Total, a.Total) }

func addProfile(a, b TestProfile) TestProfile {
	a.Total += b.Total
	a.Profile = a.Profile.Add(b.Profile)
	a.Lines += b.Lines
	return a
}
