package kernels

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// ExpectationTable renders what kernels/expectations says of seeds (all
// when none are given) as an aligned text table: a row per seed, a column
// per kernel of the file, each cell "present" or "absent" ("—" where the
// file does not judge it), and a last row of the known issues of those
// seeds each kernel is allowed. The README and every suite's doc comment carry it, checked
// by TestTablesMatchExpectations.
func ExpectationTable(seeds ...feature.Seed) (string, error) {
	all, err := Expectations()
	if err != nil {
		return "", err
	}
	names := expectationOrder(all)
	rows := [][]string{append([]string{"seed"}, names...)}
	for _, s := range feature.Seeds {
		if len(seeds) > 0 && !slices.Contains(seeds, s.Seed) {
			continue
		}
		row := []string{string(s.Seed)}
		for _, n := range names {
			cell := "—"
			if want, ok := all[n].Seeds[s.Seed]; ok {
				cell = map[bool]string{true: "present", false: "absent"}[want]
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	row, any := []string{"xfail"}, false
	for _, n := range names {
		var known []string
		for _, i := range slices.Sorted(maps.Keys(feature.Issues)) {
			if all[n].Known[i] && (len(seeds) == 0 || slices.Contains(seeds, feature.Issues[i])) {
				known, any = append(known, string(i)), true
			}
		}
		row = append(row, cellOf(known))
	}
	if any {
		rows = append(rows, row)
	}
	var b strings.Builder
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			fmt.Fprintf(&line, "%-*s  ", width[i], c)
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	return b.String(), nil
}

func cellOf(items []string) string {
	if len(items) == 0 {
		return "—"
	}
	return strings.Join(items, "+")
}

// expectationOrder is the catalog's order, then the file's other kernels
// (machines' own) by name.
func expectationOrder(all map[string]feature.Expectation) []string {
	var names []string
	for _, s := range debianSeries {
		if _, ok := all[s.Name]; ok {
			names = append(names, s.Name)
		}
	}
	var rest []string
	for n := range all {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}
