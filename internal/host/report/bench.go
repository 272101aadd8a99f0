package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// metrics are the benchmark units the report charts, in chart order, and
// the charts' titles. Other units are left out.
var metrics = []struct{ Unit, Title string }{
	{"rx-pps", "received packets/s"},
	{"tx-pps", "sent packets/s"},
	{"lost/s", "lost packets/s"},
	{"raises/pkt", "NET_TX softirq raises per delivered packet"},
}

// groupKeys are the sub-benchmark keys that get a chart of their own per
// value ("threads=2"); the other keys are a chart's series.
var groupKeys = []string{"threads", "senders"}

// A benchChart is one benchmark's results in one unit for one value of a
// group key: a series per variant, a value list per kernel.
type benchChart struct {
	Bench, Group, Unit, Title string
	Series                    []*series
}

// A series is one variant ("mode=backpressure") of a benchmark: every
// result on each kernel, indexed like the snapshots.
type series struct {
	Name   string
	Values [][]float64
}

// benchmarks reads every kernel's benchmark lines with benchfmt and returns
// the charts, by benchmark (as first seen), group and unit (as in metrics);
// problems are the lines benchfmt could not read.
func benchmarks(snaps []results.Snapshot) (charts []*benchChart, problems []string) {
	type key struct{ bench, group, unit string }
	byKey := map[key]*benchChart{}
	var benchOrder []string
	for i, s := range snaps {
		r := benchfmt.NewReader(strings.NewReader(strings.Join(s.Benchmarks, "\n")), s.Kernel)
		for r.Scan() {
			switch rec := r.Result().(type) {
			case *benchfmt.SyntaxError:
				problems = append(problems, rec.Error())
			case *benchfmt.Result:
				bench, group, variant := splitName(rec.Name)
				for _, v := range rec.Values {
					title, ok := metricTitle(v.Unit)
					if !ok {
						continue
					}
					k := key{bench, group, v.Unit}
					c := byKey[k]
					if c == nil {
						name := strings.Join(strings.Fields(bench+" "+group), " ")
						c = &benchChart{Bench: bench, Group: group, Unit: v.Unit, Title: name + ": " + title}
						byKey[k] = c
						charts = append(charts, c)
						if !slices.Contains(benchOrder, bench) {
							benchOrder = append(benchOrder, bench)
						}
					}
					c.add(variant, bench, i, len(snaps), v.Value)
				}
			}
		}
		if err := r.Err(); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", s.Kernel, err))
		}
	}
	slices.SortStableFunc(charts, func(a, b *benchChart) int {
		return cmp.Or(
			cmp.Compare(slices.Index(benchOrder, a.Bench), slices.Index(benchOrder, b.Bench)),
			compareGroups(a.Group, b.Group),
			cmp.Compare(metricIndex(a.Unit), metricIndex(b.Unit)))
	})
	return charts, problems
}

func (c *benchChart) add(variant, bench string, kernel, kernels int, v float64) {
	name := cmp.Or(variant, bench)
	i := slices.IndexFunc(c.Series, func(s *series) bool { return s.Name == name })
	if i < 0 {
		c.Series = append(c.Series, &series{Name: name, Values: make([][]float64, kernels)})
		i = len(c.Series) - 1
	}
	c.Series[i].Values[kernel] = append(c.Series[i].Values[kernel], v)
}

// kernels lists the kernels (snapshot indexes) that have a value in c.
func (c *benchChart) kernels() []int {
	var out []int
	for k := range c.Series[0].Values {
		for _, s := range c.Series {
			if len(s.Values[k]) > 0 {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// splitName splits "BenchmarkTap/threads=2/mode=backpressure-4" into the
// benchmark, the group ("threads=2") and the variant
// ("mode=backpressure"). The GOMAXPROCS suffix is dropped: it differs
// between the host and a VM and is not a variant.
func splitName(n benchfmt.Name) (bench, group, variant string) {
	base, parts := n.Parts()
	var rest []string
	for _, p := range parts {
		if p[0] == '-' {
			continue
		}
		kv := string(p[1:])
		if k, _, ok := strings.Cut(kv, "="); ok && group == "" && slices.Contains(groupKeys, k) {
			group = kv
			continue
		}
		rest = append(rest, kv)
	}
	return string(base), group, strings.Join(rest, "/")
}

// compareGroups orders "threads=2" before "threads=10".
func compareGroups(a, b string) int {
	ka, va, _ := strings.Cut(a, "=")
	kb, vb, _ := strings.Cut(b, "=")
	if ka == kb {
		na, erra := strconv.Atoi(va)
		nb, errb := strconv.Atoi(vb)
		if erra == nil && errb == nil {
			return cmp.Compare(na, nb)
		}
	}
	return strings.Compare(a, b)
}

func metricTitle(unit string) (string, bool) {
	i := metricIndex(unit)
	if i < 0 {
		return "", false
	}
	return metrics[i].Title, true
}

func metricIndex(unit string) int {
	return slices.IndexFunc(metrics, func(m struct{ Unit, Title string }) bool { return m.Unit == unit })
}

// mean returns the mean, the least and the greatest of vs.
func mean(vs []float64) (avg, lo, hi float64) {
	lo, hi = vs[0], vs[0]
	for _, v := range vs {
		avg += v
		lo, hi = min(lo, v), max(hi, v)
	}
	return avg / float64(len(vs)), lo, hi
}
