package expect

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/kernels"
)

func TestExpectationsCoverCatalog(t *testing.T) {
	all, err := Kernels()
	assert.NilError(t, err)
	for _, s := range kernels.Catalog() {
		if s.Suite == "" {
			continue // host and PATH: judged by --expect, not by a line
		}
		e, ok := all[s.Name]
		assert.Assert(t, ok, "kernels/expectations has no line for %s", s.Name)
		for _, seed := range feature.Seeds {
			_, judged := e.Seeds[seed.Seed]
			assert.Check(t, judged, "%s: no expectation for seed %s", s.Name, seed.Seed)
		}
	}
}

func TestExpectOutsideTheFile(t *testing.T) {
	e, src, err := Of(&kernels.Kernel{Name: "/tmp/bzImage"})
	assert.NilError(t, err)
	assert.Check(t, is.Contains(src, ReferenceKernel))
	assert.Check(t, e.Seeds[feature.Seed003])
	assert.Check(t, is.Len(e.Features, 0), "features depend on a build's config: not judged outside the file")

	e, src, err = Of(&kernels.Kernel{Name: "debian:5.10"})
	assert.NilError(t, err)
	assert.Check(t, is.Equal(src, "kernels/expectations"))
	assert.Check(t, !e.Seeds[feature.Seed004])
}

func TestExpectHost(t *testing.T) {
	e, _, err := Of(&kernels.Kernel{Name: "host", Host: true})
	assert.NilError(t, err)
	assert.Check(t, is.Len(e.Seeds, 0), "no release string says what the host carries")
	assert.Check(t, is.Len(e.Features, 0))
	for _, i := range []feature.Issue{feature.IssueDevmapSameDevice, feature.IssueQdiscBurstUncounted} {
		assert.Check(t, e.Known[i], "an upstream defect may show on any kernel: %s", i)
	}
}

// TestExpectRunning: an installed collection judges the running kernel by
// the line its caller names, else by its release's catalog kernel, else by
// none (seeds not judged, as for --kernel host).
func TestRunning(t *testing.T) {
	text := kernels.ExpectationsFile()
	e, src, took, err := Running(text, "DIR/expectations", "", "6.12.117+deb13-amd64")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(took, "debian:6.12"))
	assert.Check(t, is.Contains(src, "debian:6.12, the catalog kernel of release 6.12.117+deb13-amd64"))
	assert.Check(t, !e.Seeds[feature.Seed000Tun] && e.Seeds[feature.Seed004])

	e, src, took, err = Running(text, "DIR/expectations", "debian:7.3", "6.12.117+deb13-amd64")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(took, "debian:7.3"), "the caller's name wins over the release")
	assert.Check(t, is.Contains(src, "named by the caller"))
	assert.Check(t, e.Seeds[feature.Seed000Tun])

	e, src, took, err = Running(text, "DIR/expectations", "", "7.3.4")
	assert.NilError(t, err)
	assert.Check(t, is.Equal(took, ""), "a self-built 7.3.4 is no catalog kernel")
	assert.Check(t, is.Len(e.Seeds, 0))
	assert.Check(t, e.Known[feature.IssueDevmapSameDevice], "the known issues of every line")
	assert.Check(t, is.Contains(src, "seeds not judged"))

	_, _, _, err = Running(text, "DIR/expectations", "build:mine", "7.3.4")
	assert.ErrorContains(t, err, "DIR/expectations has no line for build:mine (named by the caller)")

	_, _, _, err = Running("debian:7.3 000 nonsense\n", "DIR/expectations", "", "7.3.4")
	assert.ErrorContains(t, err, `DIR/expectations:1: expectation "000 nonsense": unknown item "nonsense"`)
}
