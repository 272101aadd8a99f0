package kbuild

import (
	"context"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestMakerFlags holds make's environment to the recipe: the caller's
// compile flags do not reach kbuild (a build is cached by its recipe), and
// the recipe's KCFLAGS and ccache's depend mode do, once each.
func TestMakerFlags(t *testing.T) {
	for _, name := range []string{"KCFLAGS", "KCPPFLAGS", "KAFLAGS", "KRUSTFLAGS"} {
		t.Setenv(name, "-DFROM_THE_CALLER")
	}
	m := maker{ctx: context.Background(), src: "/src", out: "/out", ccache: "/ccache"}
	env := m.cmd("bzImage").Env
	for _, kv := range env {
		assert.Check(t, !strings.Contains(kv, "FROM_THE_CALLER"), "%s reached make", kv)
	}
	count := func(kv string) int {
		return len(slices.DeleteFunc(slices.Clone(env), func(e string) bool { return e != kv }))
	}
	assert.Check(t, is.Equal(count("KCFLAGS=-fno-var-tracking"), 1))
	assert.Check(t, is.Equal(count("CCACHE_DEPEND=1"), 1))
}
