package kernels

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

func TestExpectationsCoverCatalog(t *testing.T) {
	all, err := Expectations()
	assert.NilError(t, err)
	for _, s := range debianSeries {
		e, ok := all[s.Name]
		assert.Assert(t, ok, "kernels/expectations has no line for %s", s.Name)
		for _, seed := range feature.Seeds {
			_, judged := e.Seeds[seed.Seed]
			assert.Check(t, judged, "%s: no expectation for seed %s", s.Name, seed.Seed)
		}
	}
}

func TestExpectOutsideTheFile(t *testing.T) {
	e, src, err := Expect(&Kernel{Name: "/tmp/bzImage"})
	assert.NilError(t, err)
	assert.Check(t, is.Contains(src, ReferenceKernel))
	assert.Check(t, e.Seeds[feature.Seed003])
	assert.Check(t, is.Len(e.Features, 0), "features depend on a build's config: not judged outside the file")

	e, src, err = Expect(&Kernel{Name: "debian:5.10"})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(src, "kernels/expectations"))
	assert.Check(t, !e.Seeds[feature.Seed004])
}

func TestExpectHost(t *testing.T) {
	e, _, err := Expect(&Kernel{Name: "host", Host: true})
	assert.NilError(t, err)
	assert.Check(t, is.Len(e.Seeds, 0), "no release string says what the host carries")
	assert.Check(t, is.Len(e.Features, 0))
	for _, i := range []feature.Issue{feature.IssueDevmapSameDevice, feature.IssueQdiscBurstUncounted} {
		assert.Check(t, e.Known[i], "an upstream defect may show on any kernel: %s", i)
	}
}
