package results

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestGoTestTools feeds the JSON of a recorded two-kernel run to the tools
// people read go test -json with (pinned in go.mod's tool directive): each
// must list every package of both kernels, the verdicts included, and show
// a verdict's reason.
func TestGoTestTools(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds gotestsum, tparse and go-junit-report")
	}
	runs := recorded(t, "!000 !002 004", expect73) // 5.10 told it has 004: a failing verdict
	path := filepath.Join(t.TempDir(), "run.json")
	f, err := os.Create(path)
	assert.NilError(t, err)
	assert.NilError(t, WriteJSON(f, runs))
	assert.NilError(t, f.Close())

	pkgs := []string{
		"debian:5.10/suites/devmap", "debian:5.10/suites/tun", "debian:5.10/verdicts",
		"debian:7.3/suites/devmap", "debian:7.3/suites/tun", "debian:7.3/verdicts",
	}
	reason := "004: absent (want present): devmap program ran at enqueue time"
	for _, tool := range []struct {
		name string
		args []string
	}{
		{"gotestsum", []string{"gotestsum", "--format", "standard-verbose", "--raw-command", "--", "cat", path}},
		{"tparse", []string{"tparse", "-all", "-file", path}},
		{"go-junit-report", []string{"go-junit-report", "-parser", "gojson", "-in", path}},
	} {
		t.Run(tool.name, func(t *testing.T) {
			out, _ := exec.Command("go", append([]string{"tool"}, tool.args...)...).CombinedOutput() // the run fails: exit 1
			for _, p := range pkgs {
				assert.Check(t, is.Contains(string(out), p))
			}
			if tool.name == "tparse" { // tparse shows a failed test's output, wrapped to the terminal
				assert.Check(t, is.Contains(strings.Join(strings.Fields(string(out)), " "), "devmap program ran at enqueue time"))
				return
			}
			assert.Check(t, is.Contains(string(out), reason))
		})
	}
}
