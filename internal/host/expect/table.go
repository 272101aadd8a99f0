package expect

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// Table renders what kernels/expectations says of seeds (all
// when none are given) as an aligned text table: a row per kernel of the
// file, a column per seed, each cell "present" or "absent" ("—" where the
// file does not judge it), and a last column of the known issues of those
// seeds the kernel is allowed. docs/verdicts.md carries it, checked by
// TestTablesMatchExpectations.
func Table(seeds ...feature.Seed) (string, error) {
	all, err := Kernels()
	if err != nil {
		return "", err
	}
	header := []string{"kernel"}
	for _, s := range feature.Seeds {
		if len(seeds) == 0 || slices.Contains(seeds, s.Seed) {
			header = append(header, string(s.Seed))
		}
	}
	rows, anyKnown := [][]string{header}, false
	for _, n := range expectationOrder(all) {
		row := []string{n}
		for _, seed := range header[1:] {
			cell := "—"
			if want, ok := all[n].Seeds[feature.Seed(seed)]; ok {
				cell = map[bool]string{true: "present", false: "absent"}[want]
			}
			row = append(row, cell)
		}
		var known []string
		for _, i := range slices.Sorted(maps.Keys(feature.Issues)) {
			if all[n].Known[i] && (len(seeds) == 0 || slices.Contains(seeds, feature.Issues[i])) {
				known, anyKnown = append(known, string(i)), true
			}
		}
		rows = append(rows, append(row, cellOf(known)))
	}
	if anyKnown {
		rows[0] = append(rows[0], "xfail")
	} else {
		for i := 1; i < len(rows); i++ {
			rows[i] = rows[i][:len(rows[i])-1]
		}
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
func expectationOrder(all map[string]Expectation) []string {
	var names []string
	for _, e := range kernels.Catalog() {
		if _, ok := all[e.Name]; ok {
			names = append(names, e.Name)
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
