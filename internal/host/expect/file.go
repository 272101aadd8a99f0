package expect

import (
	"bufio"
	"fmt"
	"maps"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/kernels"
)

// ReferenceKernel is the kernel whose seeds a kernel outside the
// expectation file is expected to show: the newest, with every merged seed.
const ReferenceKernel = "debian:7.3"

// Kernels returns every line of the expectation file (kernels/expectations,
// as xmitcheck was built with it), by kernel name ("debian:7.3").
func Kernels() (map[string]Expectation, error) {
	return ParseFile(kernels.ExpectationsFile(), "kernels/expectations")
}

// ParseFile reads an expectation file's text (file names it in
// errors): one expectation per kernel name.
func ParseFile(text, file string) (map[string]Expectation, error) {
	out := map[string]Expectation{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, spec, _ := strings.Cut(line, " ")
		e, err := Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s twice", file, n, name)
		}
		out[name] = e
	}
	return out, nil
}

// Of returns what k must show and where that comes from: its line in
// the expectation file, or, for a kernel outside it (a path, a build), the
// seeds and known issues of ReferenceKernel, so that a kernel that lacks a
// merged seed never passes unless the user says it may (--expect). The
// running kernel (host) has no seeds judged but by --expect: any machine's
// kernel can run the suites, and its release string says nothing of what
// it carries. It may show the known issues of any line, each an upstream
// defect a kernel of any version can carry, and each an XFAIL only when a
// test saw exactly it.
func Of(k *kernels.Kernel) (Expectation, string, error) {
	all, err := Kernels()
	if err != nil {
		return Expectation{}, "", err
	}
	if k.Host {
		return unjudged(all, "kernels/expectations"), unjudgedSource("kernels/expectations"), nil
	}
	if e, ok := all[k.Name]; ok {
		return e, "kernels/expectations", nil
	}
	ref := all[ReferenceKernel]
	source := "the seeds and known issues of " + ReferenceKernel +
		" (not in kernels/expectations; --expect says otherwise)"
	return Expectation{Seeds: ref.Seeds, Known: ref.Known}, source, nil
}

// Running is what the running kernel must show when the suites run
// outside xmitcheck's runner (an installed kselftest collection), by the
// expectation file's text (file names it): the line of name, a catalog
// name the caller gives ("" for none), else of the catalog kernel its
// release is (kernels.NameOfRelease), else none: then, as for --kernel host, no
// seed is judged and the known issues of every line are allowed. It
// returns the name it took ("" for none) and where e comes from.
func Running(text, file, name, release string) (e Expectation, source, took string, err error) {
	all, err := ParseFile(text, file)
	if err != nil {
		return Expectation{}, "", "", err
	}
	how := "named by the caller"
	if name == "" {
		name, _ = kernels.NameOfRelease(release)
		how = "the catalog kernel of release " + release
	}
	if name == "" {
		return unjudged(all, file), unjudgedSource(file), "", nil
	}
	e, ok := all[name]
	if !ok {
		return Expectation{}, "", "", fmt.Errorf("%s has no line for %s (%s): name a kernel it has, "+
			"or none to judge no seed", file, name, how)
	}
	return e, file + " (" + name + ", " + how + ")", name, nil
}

// unjudged is the running kernel's expectation: no seed judged, the known
// issues of every line allowed (upstream defects any kernel may carry).
func unjudged(all map[string]Expectation, file string) Expectation {
	e := Expectation{Known: map[feature.Issue]bool{}}
	for _, x := range all {
		maps.Copy(e.Known, x.Known)
	}
	return e
}

func unjudgedSource(file string) string {
	return "seeds not judged: the running kernel has no expectation (--expect gives one); the known issues of " + file
}
