package kernels

import (
	"bufio"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// TestBaseConfig holds base.config to what configure can merge: comments
// and CONFIG_X=y or =N lines, none repeated, none that kernels/config already
// sets (an option the suites need belongs there, where it is checked).
func TestBaseConfig(t *testing.T) {
	line := regexp.MustCompile(`^CONFIG_[A-Z0-9_]+=(y|[0-9]+)$`)
	suites := map[string]bool{}
	for l := range strings.SplitSeq(Config, "\n") {
		suites[strings.TrimSpace(l)] = true
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(Base))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		assert.Check(t, line.MatchString(l), "base.config: %q is not CONFIG_X=y or =N", l)
		assert.Check(t, !seen[l], "base.config: %s twice", l)
		assert.Check(t, !suites[l], "base.config: %s is kernels/config's", l)
		seen[l] = true
	}
	assert.Check(t, seen["CONFIG_64BIT=y"], "allnoconfig builds a 32-bit kernel without CONFIG_64BIT")
}
