package cost

import (
	"strconv"
	"strings"
)

// Sample is one benchmark result line: the package's short name
// ("suites/tun"), the benchmark's full name without go test's -GOMAXPROCS
// suffix, and every metric by unit.
type Sample struct {
	Package, Name string
	Metrics       map[string]float64
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
	if i := strings.LastIndexByte(name, '#'); i > strings.LastIndexByte(name, '/') {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	if _, err := strconv.Atoi(strings.TrimSpace(f[1])); err != nil {
		return Sample{}, false
	}
	s = Sample{Package: pkg, Name: name, Metrics: map[string]float64{}}
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
// with name+"/", the values of unit in the order they came: the k-th
// result of a name is round k, since every round runs every side once.
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
		out[s.Name] = append(out[s.Name], v)
	}
	return out
}
