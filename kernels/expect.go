package kernels

import (
	"bufio"
	_ "embed"
	"fmt"
	"maps"
	"strings"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// expectations is the expectation file: what each catalog kernel must
// show.
//
//go:embed expectations
var expectations string

// ReferenceKernel is the kernel whose seeds a kernel outside the
// expectation file is expected to show: the newest, with every merged seed.
const ReferenceKernel = "debian:7.3"

// Expectations returns every line of the expectation file, by kernel name
// ("debian:7.3").
func Expectations() (map[string]expect.Expectation, error) {
	out := map[string]expect.Expectation{}
	sc := bufio.NewScanner(strings.NewReader(expectations))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, spec, _ := strings.Cut(line, " ")
		e, err := expect.Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("kernels/expectations:%d: %w", n, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("kernels/expectations:%d: %s twice", n, name)
		}
		out[name] = e
	}
	return out, nil
}

// Expect returns what k must show and where that comes from: its line in
// the expectation file, or, for a kernel outside it (a path, a build), the
// seeds and known issues of ReferenceKernel, so that a kernel that lacks a
// merged seed never passes unless the user says it may (--expect). The
// running kernel (host) has no seeds judged but by --expect: any machine's
// kernel can run the suites, and its release string says nothing of what
// it carries. It may show the known issues of any line, each an upstream
// defect a kernel of any version can carry, and each an XFAIL only when a
// test saw exactly it.
func Expect(k *Kernel) (expect.Expectation, string, error) {
	all, err := Expectations()
	if err != nil {
		return expect.Expectation{}, "", err
	}
	if k.Host {
		e := expect.Expectation{Known: map[feature.Issue]bool{}}
		for _, x := range all {
			maps.Copy(e.Known, x.Known)
		}
		source := "seeds not judged: the running kernel has no expectation (--expect gives one); " +
			"the known issues of kernels/expectations"
		return e, source, nil
	}
	if e, ok := all[k.Name]; ok {
		return e, "kernels/expectations", nil
	}
	ref := all[ReferenceKernel]
	source := "the seeds and known issues of " + ReferenceKernel +
		" (not in kernels/expectations; --expect says otherwise)"
	return expect.Expectation{Seeds: ref.Seeds, Known: ref.Known}, source, nil
}
