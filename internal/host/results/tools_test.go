package results

import (
	"fmt"
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

// TestPipesKeepExitCode runs the lines docs/outputs.md gives for gotestsum
// and tparse, with ./xmitcheck a script that prints a recorded run's JSON
// and exits as a run would: each line must exit with that code, whether
// the stream shows a failure (exit 1) or not (a crash after the tests
// passed: exit 3).
func TestPipesKeepExitCode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds gotestsum and tparse")
	}
	doc, err := os.ReadFile("../../../docs/outputs.md")
	assert.NilError(t, err)
	var lines []string
	for l := range strings.SplitSeq(string(doc), "\n") {
		if strings.HasPrefix(l, "    ") && strings.Contains(l, "xmitcheck run --json") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	assert.Assert(t, is.Len(lines, 2), "the gotestsum and tparse lines of docs/outputs.md")

	dir := t.TempDir()
	for _, tool := range []string{"gotest.tools/gotestsum", "github.com/mfridman/tparse"} {
		out, err := exec.Command("go", "build", "-o", dir, tool).CombinedOutput()
		assert.NilError(t, err, "%s", out)
	}
	for _, tc := range []struct {
		name   string
		expect string
		code   int
	}{
		{"a failed verdict", "!000 !002 004", 1},
		{"a crash after the tests passed", expect510, 3},
	} {
		f, err := os.Create(filepath.Join(dir, "run.json"))
		assert.NilError(t, err)
		assert.NilError(t, WriteJSON(f, recorded(t, tc.expect, expect73)))
		assert.NilError(t, f.Close())
		fake := fmt.Sprintf("#!/bin/sh\ncat %s/run.json\nexit %d\n", dir, tc.code)
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "xmitcheck"), []byte(fake), 0o755))
		for i, line := range lines {
			t.Run(tc.name+"/"+[]string{"gotestsum", "tparse"}[i], func(t *testing.T) {
				cmd := exec.Command("bash", "-c", line)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
				out, _ := cmd.CombinedOutput()
				assert.Check(t, is.Equal(cmd.ProcessState.ExitCode(), tc.code), "%s:\n%s", line, out)
			})
		}
	}
}
