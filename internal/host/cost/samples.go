package cost

import (
	"math"
	"strconv"
	"strings"
)

// Sample is one benchmark result line: the package's short name
// ("suites/tun"), the benchmark's full name without go test's -GOMAXPROCS
// suffix, and every metric by unit.
type Sample struct {
	Package, Name string
	Metrics       map[string]float64
	// Round is the run's round within one benchmark call as go test's
	// #NN suffix numbers it (rounds.Run calls each side once a round, so
	// the call numbered k is round k whether or not the calls before it
	// failed); 0 where the name has no suffix: the first run, or the only
	// one.
	Round int
}

// ParseLine reads one go test benchmark line ("BenchmarkTap/x-2 \t 1000 \t
// 12 ns/op \t 34 rx-pps"), the name without go test's -GOMAXPROCS and
// #NN suffixes; ok is false for any other line.
func ParseLine(pkg, line string) (s Sample, ok bool) {
	f := strings.Split(line, "\t")
	if len(f) < 3 || !strings.HasPrefix(f[0], "Benchmark") {
		return Sample{}, false
	}
	name := strings.TrimSpace(f[0])
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	// go test names a sub-benchmark's later runs under one parent
	// "side=A#01", "#02"…: the rounds of one side, in order.
	round := 0
	if i := strings.LastIndexByte(name, '#'); i > strings.LastIndexByte(name, '/') {
		if n, err := strconv.Atoi(name[i+1:]); err == nil {
			name, round = name[:i], n
		}
	}
	if _, err := strconv.Atoi(strings.TrimSpace(f[1])); err != nil {
		return Sample{}, false
	}
	s = Sample{Package: pkg, Name: name, Metrics: map[string]float64{}, Round: round}
	for _, m := range f[2:] {
		v, unit, ok := strings.Cut(strings.TrimSpace(m), " ")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		s.Metrics[unit] = x
	}
	return s, true
}

// rounds returns, for each benchmark of pkg whose name is name or begins
// with name+"/", the values of unit by round: a run go test numbered
// (Sample.Round) in its round, any other in the order they came (the
// first run of a side in one boot, or compare's one run a boot). A round
// without a value (its run failed or skipped) is NaN, so that no later
// round slides into its place.
func rounds(samples []Sample, pkg, name, unit string) map[string][]float64 {
	out := map[string][]float64{}
	for _, s := range samples {
		if s.Package != pkg || (s.Name != name && !strings.HasPrefix(s.Name, name+"/")) {
			continue
		}
		v, ok := s.Metrics[unit]
		if !ok {
			continue
		}
		k := len(out[s.Name])
		if s.Round > 0 {
			k = s.Round
		}
		for len(out[s.Name]) <= k {
			out[s.Name] = append(out[s.Name], math.NaN())
		}
		out[s.Name][k] = v
	}
	return out
}
