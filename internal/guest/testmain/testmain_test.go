package testmain

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestAdded(t *testing.T) {
	before, after := []string{"3 -> a", "4 -> b"}, []string{"3 -> a", "5 -> socket:[9]"}
	assert.DeepEqual(t, added(before, after), []string{"5 -> socket:[9]"})
	assert.Assert(t, added([]string{"lo"}, []string{"lo"}) == nil)
}

func TestOpenFDsSeesNewFile(t *testing.T) {
	before, err := openFDs()
	assert.NilError(t, err)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	assert.NilError(t, err)
	now, err := openFDs()
	assert.NilError(t, err)
	assert.Equal(t, len(added(before, now)), 1)
	f.Close()
}
