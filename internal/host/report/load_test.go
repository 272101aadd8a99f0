package report

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
)

// fixture is testdata/results.json: three kernels, verdicts in every
// state, tests in every status, benchmark lines on two kernels.
func fixture(t *testing.T) []results.Snapshot {
	t.Helper()
	snaps, err := Load("testdata")
	assert.NilError(t, err)
	return snaps
}

func TestLoad(t *testing.T) {
	snaps := fixture(t)
	assert.Check(t, is.Len(snaps, 3))
	assert.Check(t, is.Equal(snaps[1].Package, "linux-image-7.3.4+bpo-amd64 7.3.4-1~bpo13+1"))

	for _, tc := range []struct {
		name, content, want string
	}{
		{"corrupt", "[\n  {\"Kernel\": \"a\",\n  oops", "results.json:3:3: not valid JSON"},
		{"not an array", `{"Kernel": "a"}`, "results.json:1:1: not a JSON array of kernel results"},
		{"a field of the wrong type", `[{"Kernel": "a", "Total": "1s"}]`,
			"results.json:1:30: not a JSON array of kernel results"},
		{"empty", `[]`, "results.json holds no kernel's results"},
		{"not snapshots", `[{"Action": "run"}]`, "results.json: entry 1 has no Kernel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			assert.NilError(t, os.WriteFile(filepath.Join(dir, "results.json"), []byte(tc.content), 0o644))
			_, err := Load(dir)
			assert.Check(t, is.ErrorContains(err, filepath.Join(dir, tc.want)))
		})
	}

	t.Run("missing", func(t *testing.T) {
		dir := t.TempDir()
		_, err := Load(dir)
		assert.Check(t, is.ErrorIs(err, fs.ErrNotExist))
		want := "no " + filepath.Join(dir, "results.json") + ": `xmitcheck matrix --out " + dir + "` writes it"
		assert.Check(t, is.ErrorContains(err, want))
	})
	t.Run("a file", func(t *testing.T) {
		_, err := Load("testdata/results.json")
		assert.Check(t, is.ErrorContains(err, "testdata/results.json is a file: give the folder"))
	})
}
