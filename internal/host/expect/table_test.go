package expect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
)

// TestTablesMatchExpectations holds docs/verdicts.md's table of expected
// verdicts to kernels/expectations, the one source of truth
// (go test ./internal/host/expect -run TestTablesMatchExpectations -args -update
// rewrites them).
func TestTablesMatchExpectations(t *testing.T) {
	all, err := Table()
	assert.NilError(t, err)
	begin, end := "<!-- expectations: begin -->\n```\n", "```\n<!-- expectations: end -->"
	checkBlock(t, filepath.Join("..", "..", "..", "docs", "verdicts.md"), begin, end, all)
}

// checkBlock checks that path holds want between begin and the next end,
// or rewrites it there with -update.
func checkBlock(t *testing.T, path, begin, end, want string) {
	t.Helper()
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	s := string(data)
	i := strings.Index(s, begin)
	if i < 0 {
		t.Errorf("%s has no generated table (it starts with %q)", path, strings.SplitN(begin, "\n", 2)[0])
		return
	}
	i += len(begin)
	j := strings.Index(s[i:], end)
	assert.Assert(t, j >= 0, "%s: the table after %q has no end %q", path, begin, end)
	if s[i:i+j] == want {
		return
	}
	if golden.FlagUpdate() { // gotest.tools' -update
		assert.NilError(t, os.WriteFile(path, []byte(s[:i]+want+s[i+j:]), 0o644))
		return
	}
	t.Errorf("%s: the table differs from kernels/expectations:\n%s\nwant:\n%s\n"+
		"(go test ./internal/host/expect -run TestTablesMatchExpectations -args -update)", path, s[i:i+j], want)
}
