// Package expect says what a kernel must show — seeds present or absent,
// features it has or lacks, known issues allowed — in the syntax of
// --expect and of kernels/expectations, and reads that file for a kernel.
// Only the host reads it: the judge holds each run to one.
package expect

import (
	"github.com/xmitcheck/xmitcheck/internal/feature"

	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// Expectation is what a kernel must show: seeds present or absent, features
// it has or lacks, known issues allowed to fail as XFAIL. What it does not
// mention is not judged.
type Expectation struct {
	Seeds    map[feature.Seed]bool
	Features map[feature.Feature]bool
	Known    map[feature.Issue]bool
}

// Parse reads a list separated by commas or spaces: a seed ("003", "000-tun";
// "000" is both sides of seed 000) or a feature ("IFF_BACKPRESSURE") says
// the kernel has it, a leading "!" that it has not, and "xfail:ISSUE" allows
// the known issue. The empty string expects nothing; an empty item between
// commas ("000,,003") is an error, as it is most likely a word left out.
func Parse(spec string) (Expectation, error) {
	e := Expectation{Seeds: map[feature.Seed]bool{}, Features: map[feature.Feature]bool{}, Known: map[feature.Issue]bool{}}
	for _, part := range strings.Split(spec, ",") {
		if strings.TrimSpace(part) == "" && strings.TrimSpace(spec) != "" {
			return Expectation{}, fmt.Errorf("expectation %q: an empty item between commas: name a seed, a feature "+
				"or xfail:ISSUE there, or remove the comma", spec)
		}
	}
	for _, item := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		want := true
		if rest, ok := strings.CutPrefix(item, "!"); ok {
			item, want = rest, false
		}
		if issue, ok := strings.CutPrefix(item, "xfail:"); ok && want && feature.Issues[feature.Issue(issue)] != "" {
			e.Known[feature.Issue(issue)] = true
			continue
		}
		if seeds := seedsNamed(item); len(seeds) > 0 {
			for _, s := range seeds {
				e.Seeds[s] = want
			}
			continue
		}
		if f, ok := feature.FeatureNamed(item); ok {
			e.Features[f] = want
			continue
		}
		return Expectation{}, fmt.Errorf("expectation %q: unknown item %q: want a seed (%s), a feature (%s) "+
			"or xfail:ISSUE (%s), each optionally negated with !",
			spec, item, strings.Join(seedNames(), " "), strings.Join(featureNames(), " "), strings.Join(issueNames(), " "))
	}
	return e, nil
}

// seedsNamed returns the seeds an item names: a seed, or "000" for both of
// its sides.
func seedsNamed(item string) []feature.Seed {
	var out []feature.Seed
	for _, s := range feature.Seeds {
		if string(s.Seed) == item || strings.HasPrefix(string(s.Seed), item+"-") {
			out = append(out, s.Seed)
		}
	}
	return out
}

// String writes e back in the syntax Parse reads, in a stable
// order.
func (e Expectation) String() string {
	var items []string
	neg := func(want bool) string {
		if want {
			return ""
		}
		return "!"
	}
	for _, s := range feature.Seeds {
		if want, ok := e.Seeds[s.Seed]; ok {
			items = append(items, neg(want)+string(s.Seed))
		}
	}
	for _, f := range slices.Sorted(maps.Keys(e.Features)) {
		items = append(items, neg(e.Features[f])+string(f))
	}
	for _, i := range slices.Sorted(maps.Keys(e.Known)) {
		items = append(items, "xfail:"+string(i))
	}
	return strings.Join(items, ",")
}

// Override returns e with what o says in its place: o's seeds and
// features replace e's, its known issues join e's.
func (e Expectation) Override(o Expectation) Expectation {
	out := Expectation{
		Seeds:    map[feature.Seed]bool{},
		Features: map[feature.Feature]bool{},
		Known:    map[feature.Issue]bool{},
	}
	for _, x := range []Expectation{e, o} {
		maps.Copy(out.Seeds, x.Seeds)
		maps.Copy(out.Features, x.Features)
		maps.Copy(out.Known, x.Known)
	}
	return out
}

// Empty reports whether e judges nothing.
func (e Expectation) Empty() bool {
	return len(e.Seeds) == 0 && len(e.Features) == 0 && len(e.Known) == 0
}

// WantFeature reports whether the kernel is expected to have f: the
// expectation names it, or a seed it gates is expected present.
func (e Expectation) WantFeature(f feature.Feature) bool {
	if e.Features[f] {
		return true
	}
	for _, s := range feature.Features[f] {
		if e.Seeds[s] {
			return true
		}
	}
	return false
}

func seedNames() []string {
	var out []string
	for _, s := range feature.Seeds {
		out = append(out, string(s.Seed))
	}
	return out
}

func featureNames() []string {
	var out []string
	for _, f := range slices.Sorted(maps.Keys(feature.Features)) {
		out = append(out, string(f))
	}
	return out
}

func issueNames() []string {
	var out []string
	for _, i := range slices.Sorted(maps.Keys(feature.Issues)) {
		out = append(out, string(i))
	}
	return out
}
