package results

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// WriteSoak compares rounds of the same runs (rounds[i][k] is kernel k's
// run in round i): every seed whose verdict changed between rounds and
// every test whose status did, by name, with the rounds of each outcome;
// then how close each time-bounded wait came to its limit. It reports
// whether everything held still.
func WriteSoak(w io.Writer, rounds [][]*Run) bool {
	writeMargins(w, rounds)
	steady := true
	for k := range rounds[0] {
		kernel := rounds[0][k].Kernel
		verdicts := map[string]map[string][]int{} // seed -> state -> rounds
		tests := map[string]map[Status][]int{}
		var why = map[string]string{}
		for i, runs := range rounds {
			r := runs[k]
			for _, v := range r.Verdicts {
				m := verdicts[string(v.Seed)]
				if m == nil {
					m = map[string][]int{}
					verdicts[string(v.Seed)] = m
				}
				m[string(v.State)] = append(m[string(v.State)], i+1)
				if v.State != Present {
					why[fmt.Sprintf("%s %s %d", v.Seed, v.State, i+1)] = v.Why
				}
			}
			for _, t := range r.Tests {
				if t.Name == "" || r.hasChildren(t) {
					continue
				}
				name := ShortPackage(t.Package) + "." + t.Name
				if tests[name] == nil {
					tests[name] = map[Status][]int{}
				}
				tests[name][t.Status] = append(tests[name][t.Status], i+1)
				if t.Status == Fail {
					why[fmt.Sprintf("%s fail %d", name, i+1)] = t.firstFailure()
				}
			}
		}
		for _, seed := range slices.Sorted(maps.Keys(verdicts)) {
			if m := verdicts[seed]; len(m) > 1 || total(m) != len(rounds) {
				steady = false
				whyIn := func(state string, round int) string { return why[fmt.Sprintf("%s %s %d", seed, state, round)] }
				fmt.Fprintf(w, "soak: %s: verdict of %s changed: %s\n", kernel, seed, outcomes(m, whyIn))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(tests)) {
			m := tests[name]
			if len(m) > 1 || total(m) != len(rounds) {
				steady = false
				whyIn := func(st Status, round int) string { return why[fmt.Sprintf("%s %s %d", name, st, round)] }
				fmt.Fprintf(w, "soak: %s: flaky %s: %s\n", kernel, name, outcomes(m, whyIn))
			}
		}
	}
	if steady {
		fmt.Fprintf(w, "soak: %d rounds, every verdict and every test the same in each\n", len(rounds))
	}
	return steady
}

func total[K comparable](m map[K][]int) int {
	n := 0
	for _, r := range m {
		n += len(r)
	}
	return n
}

// outcomes is "pass in rounds 1 2 4, fail in round 3 (why)".
func outcomes[K ~string](m map[K][]int, why func(K, int) string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		var rs []string
		for _, r := range m[k] {
			rs = append(rs, fmt.Sprint(r))
		}
		p := fmt.Sprintf("%s in rounds %s", k, strings.Join(rs, " "))
		if w := why(k, m[k][0]); w != "" {
			p += " (" + w + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// Margins are the run's time-bounded waits, site by site, from the lines
// its test binaries print when they end (package margin).
func (r *Run) Margins() []feature.Margin {
	var all []feature.Margin
	for _, t := range r.Tests {
		if t.Name != "" {
			continue
		}
		for _, l := range t.Output {
			if m, ok := feature.ParseMargins(l); ok {
				all = mergeMargins(all, m)
			}
		}
	}
	return all
}

// writeMargins prints each kernel's waits over all rounds, the tightest
// first: the worst wait of each site against its limit.
func writeMargins(w io.Writer, rounds [][]*Run) {
	for k := range rounds[0] {
		var all []feature.Margin
		for _, runs := range rounds {
			all = mergeMargins(all, runs[k].Margins())
		}
		if len(all) == 0 {
			continue
		}
		slices.SortStableFunc(all, func(a, b feature.Margin) int { return cmp.Compare(a.Left(), b.Left()) })
		fmt.Fprintf(w, "soak: %s: %d time-bounded waits, the worst of each over %d rounds, tightest first:\n",
			rounds[0][k].Kernel, len(all), len(rounds))
		for _, s := range all {
			fmt.Fprintf(w, "  %v\n", s)
		}
	}
}

// mergeMargins folds b into a, site by site: the larger limit, the worst
// wait, the counts added.
func mergeMargins(a, b []feature.Margin) []feature.Margin {
	m := map[string]feature.Margin{}
	for _, s := range slices.Concat(a, b) {
		o, ok := m[s.Site]
		if !ok {
			m[s.Site] = s
			continue
		}
		m[s.Site] = feature.Margin{Site: s.Site, Limit: max(o.Limit, s.Limit), Worst: max(o.Worst, s.Worst),
			N: o.N + s.N, Timeouts: o.Timeouts + s.Timeouts}
	}
	var out []feature.Margin
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}
