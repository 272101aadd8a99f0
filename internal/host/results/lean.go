package results

import (
	"cmp"
	"slices"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// leansOn lists the seeds whose machinery a test runs over
// (observe.LeansOn), its own seed excluded.
func leansOn(o observation, own feature.Seed) []feature.Seed {
	var out []feature.Seed
	for _, rec := range o.records {
		if rec.Uses != "" && rec.Uses != own && !slices.Contains(out, rec.Uses) {
			out = append(out, rec.Uses)
		}
	}
	return out
}

// gatherLeaning decides the failed tests that run over other seeds'
// machinery, once every other test has counted. Where one of those seeds
// is BROKEN on this kernel, the failure is reported under it and judges
// nothing of the test's own seed (error, unless its tests on independent
// devices decide it); else the failure is the test's seed's, as any.
func gatherLeaning(tests []*Test, obs map[*Test]observation, get func(feature.Seed) *evidence) {
	for _, t := range tests {
		o := obs[t]
		name := ShortPackage(t.Package) + "." + t.Name
		var broken []string
		for _, s := range leansOn(o, o.seed) {
			if a := get(s); a.broken != "" {
				a.over = append(a.over, name)
				broken = append(broken, string(s))
			}
		}
		a := get(o.seed)
		if len(broken) == 0 {
			a.broken = cmp.Or(a.broken, name+": "+t.firstFailure())
			continue
		}
		a.untested = cmp.Or(a.untested, name+": not judged: it runs over the machinery of "+
			strings.Join(broken, ", ")+", BROKEN on this kernel (its failure is reported there)")
	}
}
