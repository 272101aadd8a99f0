// Package cost judges what a seed's change costs against what its message
// claims. A row is one claim (claims.go) measured by the benchmark that does
// the same work: the change of the patched side B against the stock side A
// over interleaved rounds, with its 95 % interval, and the noise floor, the
// stock side measured against itself the same way (A2 against A). Where a
// kernel has a switch for the seed the sides are sub-benchmarks of one boot
// (InBoot); elsewhere they are a base and a patched kernel booted in turn
// (Across). A row is within its claim, REGRESSED or noisy (judge.go); a
// cost never changes a seed's verdict.
package cost

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// InBoot judges the claims whose sides are sub-benchmarks of one boot,
// from that boot's results, the rounds of every side in the order they
// came. accel is how the guest ran ("tcg", "kvm", "" on the host). A claim
// whose benchmark did not run gives no row.
func InBoot(samples []Sample, accel string) []Row {
	var out []Row
	for _, c := range Claims {
		if c.Across {
			continue
		}
		for _, bench := range benches(samples, c) {
			get := func(unit string) sides {
				v := rounds(samples, c.Package, bench, unit)
				return sides{v[bench+"/"+feature.SideA], v[bench+"/"+feature.SideA2], v[bench+"/"+feature.SideB]}
			}
			r := c.row(bench, get)
			r.Method = fmt.Sprintf("A, A2 and B in one boot, %d interleaved rounds (the six orders in turn)",
				len(get(c.Unit).a))
			r.decide(accel)
			out = append(out, r)
		}
	}
	return out
}

// Across judges base against patched, each booted in turn, with the base
// booted twice a round for the floor: base, base2 and patched hold each
// kernel's results, round after round. The rows are the claims made
// across kernels and, with maxRegression > 0, every benchmark and measure
// whose direction is known (Directions), held to "no worse than
// -maxRegression %".
func Across(base, base2, patched []Sample, accel string, maxRegression float64) []Row {
	get := func(pkg, bench string) func(string) sides {
		return func(unit string) sides {
			return sides{rounds(base, pkg, bench, unit)[bench], rounds(base2, pkg, bench, unit)[bench],
				rounds(patched, pkg, bench, unit)[bench]}
		}
	}
	var out []Row
	for _, c := range Claims {
		if !c.Across {
			continue
		}
		for _, bench := range benches(slices.Concat(base, patched), c) {
			r := c.row(bench, get(c.Package, bench))
			r.Method = fmt.Sprintf("base, base again and patched booted in turn, %d rounds (the six orders in turn)",
				len(get(c.Package, bench)(c.Unit).a))
			r.decide(accel)
			out = append(out, r)
		}
	}
	if maxRegression <= 0 {
		return out
	}
	for _, k := range keys(base) {
		better, ok := Directions[k.unit]
		if !ok {
			continue
		}
		s := get(k.pkg, k.name)(k.unit)
		claim := -maxRegression
		if better == Lower {
			claim = maxRegression
		}
		r := Row{
			Row: fmt.Sprintf("%s %s", k.name, k.unit), Package: k.pkg, Bench: k.name,
			Says: fmt.Sprintf("no more than %g %% worse (--max-regression)", maxRegression),
			A:    "base kernel", B: "patched kernel",
			Measures: []Measure{s.measure(k.unit, better, claim)},
		}
		r.Method = fmt.Sprintf("base, base again and patched booted in turn, %d rounds", len(s.a))
		r.decide("")
		out = append(out, r)
	}
	return out
}

// Directions are the measures whose better way is known: compare's
// --max-regression judges these. Loss rates are left out: the base's is
// often 0, and no ratio can be made of it.
var Directions = map[string]Better{
	"rx-pps": Higher, "tx-pps": Higher, "rx-Mbit/s": Higher, "tx/cpu_s": Higher,
	"cpu-ns/frame": Lower,
}

// row measures c on bench with the values get gives per unit.
func (c Claim) row(bench string, get func(unit string) sides) Row {
	r := Row{Seed: c.Seed, Row: c.Row, Says: c.Says, Package: c.Package, Bench: bench, A: c.A, B: c.B}
	if bench != c.Bench {
		r.Row += " (" + strings.TrimPrefix(bench, c.Bench+"/") + ")"
	}
	if c.ScaleBy != "" {
		if l, ok := mean(get(c.ScaleBy).a); ok {
			f := min(l/c.ScaleAt, 1)
			r.Note = fmt.Sprintf("the claim is scaled by %.2f: the stock side's %s here is %.1f, %.1f in the claim's run",
				f, c.ScaleBy, l, c.ScaleAt)
			c.Pct *= f
		}
	}
	r.Measures = append(r.Measures, get(c.Unit).measure(c.Unit, c.Better, c.Pct))
	if c.PerFrame != "" {
		if s := get(c.PerFrame); len(s.a)+len(s.b) > 0 {
			r.Measures = append(r.Measures, s.measure(c.PerFrame, Lower, perFrame(c.Pct)))
		}
	}
	if m := r.Measures[0]; len(m.Change.Left) > 0 {
		r.Note = join(r.Note, fmt.Sprintf("%s: rounds left out where the stock side measured 0 and the patched "+
			"side did not (%s)", m.Unit, strings.Join(m.Change.Left, ", ")))
	}
	reached := func(v float64) bool { return v > 0 }
	if a := get(c.Reached).a; c.Reached != "" && count(a) > 0 && !slices.ContainsFunc(a, reached) {
		r.Note = join(r.Note, fmt.Sprintf("the stock side's %s was 0 in every round: the work never reached the path "+
			"the patch changes, so B ran A's path and this row measured no cost of the patch", c.Reached))
	}
	return r
}

// benches are the benchmarks that measure c: its Bench, or with Each every
// benchmark below it, each without its side; none if none ran.
func benches(samples []Sample, c Claim) []string {
	var out []string
	for _, s := range samples {
		if s.Package != c.Package {
			continue
		}
		name := s.Name
		if !c.Across {
			i := strings.LastIndexByte(name, '/')
			if i < 0 || !strings.HasPrefix(name[i+1:], "side=") {
				continue
			}
			name = name[:i]
		}
		if (name == c.Bench || (c.Each && strings.HasPrefix(name, c.Bench+"/"))) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

type key struct{ pkg, name, unit string }

// keys are the benchmarks and units of samples, in the order they first came.
func keys(samples []Sample) []key {
	var out []key
	for _, s := range samples {
		units := make([]string, 0, len(s.Metrics))
		for u := range s.Metrics {
			units = append(units, u)
		}
		slices.Sort(units)
		for _, u := range units {
			if k := (key{s.Package, s.Name, u}); !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// join joins two notes.
func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
