package kernels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// tableHeader starts a generated table in a doc comment; the table follows
// as tab-indented comment lines.
const tableHeader = "// Expected verdicts per kernel, from kernels/expectations"

// suiteSeeds are the seeds each suite's doc.go shows.
var suiteSeeds = map[string][]feature.Seed{
	"tun":    {feature.Seed000Tun, feature.Seed002},
	"vhost":  {feature.Seed000Vhost},
	"qdisc":  {feature.Seed003},
	"devmap": {feature.Seed004},
}

// TestTablesMatchExpectations holds the README's and the suites' tables of
// expected verdicts to kernels/expectations, the one source of truth
// (go test ./kernels -run TestTablesMatchExpectations -args -update
// rewrites them).
func TestTablesMatchExpectations(t *testing.T) {
	all, err := ExpectationTable()
	assert.NilError(t, err)
	checkBlock(t, filepath.Join("..", "README.md"), "<!-- expectations: begin -->\n```\n", "```\n<!-- expectations: end -->", all)
	for suite, seeds := range suiteSeeds {
		table, err := ExpectationTable(seeds...)
		assert.NilError(t, err)
		var b strings.Builder
		for l := range strings.SplitSeq(strings.TrimSuffix(table, "\n"), "\n") {
			b.WriteString("//\t" + l + "\n")
		}
		checkBlock(t, filepath.Join("..", "suites", suite, "doc.go"), tableHeader+" (go test ./kernels -args -update rewrites it):\n//\n", "//\n", b.String())
	}
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
	t.Errorf("%s: the table differs from kernels/expectations:\n%s\nwant:\n%s\n(go test ./kernels -run TestTablesMatchExpectations -args -update)", path, s[i:i+j], want)
}
