package kbuild

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestBuildBase(t *testing.T) {
	for in, want := range map[string]string{"": BaseMinimal, BaseMinimal: BaseMinimal, BaseDefconfig: BaseDefconfig} {
		got, err := BuildOptions{Base: in}.base()
		assert.NilError(t, err)
		assert.Check(t, is.Equal(got, want))
	}
	_, err := BuildOptions{Base: "tiny"}.base()
	assert.ErrorContains(t, err, `unknown config base "tiny"`)
}
