package results

import (
	"regexp"
	"strings"
)

// benignRaces are the KCSAN reports the judge notes and does not judge:
// data races that every kernel has, in code no seed changed, which a
// report may still name a seed's function for (a race between the seed's
// caller and a counter every driver bumps). Each is matched by the two
// functions of the report's first line, in the order KCSAN prints them
// (sorted), and says why it is benign. A report with a reordered access
// matches none: that is what a missing barrier looks like.
var benignRaces = []struct {
	pair, why string
}{}

// kcsanPair is the "A / B" of a KCSAN report's first line.
var kcsanPair = regexp.MustCompile(`^BUG: KCSAN: data-race in ([\w.]+ / [\w.]+)\s*$`)

// benign says why report, one KCSAN report, is a listed benign race, or
// "" when it is not.
func benign(report []string) string {
	pair := ""
	for _, l := range report {
		body := printkTime.ReplaceAllString(l, "")
		if strings.Contains(body, "reordered") {
			return ""
		}
		if m := kcsanPair.FindStringSubmatch(body); m != nil && pair == "" {
			pair = m[1]
		}
	}
	for _, b := range benignRaces {
		if pair != "" && b.pair == pair {
			return b.why
		}
	}
	return ""
}
