package kbuild

import (
	"bufio"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/kernels"
)

func TestParseDebug(t *testing.T) {
	got, err := ParseDebug([]string{"lockdep,kasan", "kmemleak", "kasan"})
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(got, []string{"kasan", "kmemleak", "lockdep"}), "sorted, once each")
	assert.Check(t, is.Equal(debugSuffix(got), "+kasan+kmemleak+lockdep"))
	assert.Check(t, is.Equal(debugSuffix(nil), ""))
	_, err = ParseDebug([]string{"kcsan,kasan"})
	assert.ErrorContains(t, err, "kcsan and kasan cannot share a kernel")
	_, err = ParseDebug([]string{"ubsan"})
	assert.ErrorContains(t, err, `unknown debug flavour "ubsan": use kcsan, kasan, lockdep, kmemleak`)
}

// TestDebugConfigs holds each flavour's fragment to what configure merges
// and checks: CONFIG_X=y or =N, or "# CONFIG_X is not set", none repeated,
// none the suites' own fragment sets.
func TestDebugConfigs(t *testing.T) {
	line := regexp.MustCompile(`^(CONFIG_[A-Z0-9_]+=(y|[0-9]+)|# CONFIG_[A-Z0-9_]+ is not set)$`)
	for _, f := range append(slices.Clone(DebugFlavours), "watchdogs") {
		data, err := debugConfigs.ReadFile("debug/" + f + ".config")
		assert.NilError(t, err)
		seen := map[string]bool{}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			l := sc.Text()
			if l == "" || strings.HasPrefix(l, "# ") && !line.MatchString(l) {
				continue
			}
			assert.Check(t, line.MatchString(l), "%s.config: %q", f, l)
			assert.Check(t, !seen[l], "%s.config: %s twice", f, l)
			assert.Check(t, !strings.Contains(kernels.Config, l+"\n"), "%s.config: %s is kernels/config's", f, l)
			seen[l] = true
		}
		assert.Check(t, len(seen) > 0, "%s.config sets nothing", f)
	}
}
