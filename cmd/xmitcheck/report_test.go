package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestReportKCIDB: --kcidb alone writes the KCIDB report and no page, with
// the origin asked for in every id; an origin KCIDB refuses is a usage
// error. (internal/host/kcidb validates the report against the schema.)
func TestReportKCIDB(t *testing.T) {
	folder, err := filepath.Abs("../../internal/host/report/testdata")
	assert.NilError(t, err)
	dir := t.TempDir()
	cmd := exec.Command(xmitcheck, "report", "--kcidb", "k.json", "--origin", "lab_1", folder)
	cmd.Dir = dir
	out, err := cmd.Output()
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(out), "3 kernels"), "the verdict table is still printed")
	_, err = os.Stat(filepath.Join(dir, "report.html"))
	assert.Check(t, os.IsNotExist(err), "no HTML page unless -o")

	data, err := os.ReadFile(filepath.Join(dir, "k.json"))
	assert.NilError(t, err)
	var r struct {
		Version struct{ Major int }
		Builds  []struct{ ID, Origin string }
		Tests   []struct{ ID, Path, Status string }
	}
	assert.NilError(t, json.Unmarshal(data, &r))
	assert.Check(t, is.Equal(r.Version.Major, 5))
	assert.Check(t, is.Len(r.Builds, 3))
	for _, b := range r.Builds {
		assert.Check(t, strings.HasPrefix(b.ID, "lab_1:"), b.ID)
	}

	code, stderr := xc(t, nil, nil, "report", "--kcidb", "-", "--origin", "Lab 1", folder)
	assert.Check(t, is.Equal(code, exitInfra))
	assert.Check(t, is.Contains(stderr, `--origin "Lab 1": KCIDB wants lower-case letters, digits and _ only`))
}
