package qdisc

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// setSysctl writes n to the sysctl file path for the test and puts the old
// value back at its end. The ones the suite sets are global (net_hotdata),
// in the initial namespace's /proc/sys.
func setSysctl(t *testing.T, path string, n int) {
	t.Helper()
	old, err := os.ReadFile(path)
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(path, []byte(strconv.Itoa(n)), 0o644))
	t.Cleanup(func() {
		if err := os.WriteFile(path, []byte(strings.TrimSpace(string(old))), 0o644); err != nil {
			t.Errorf("restore %s: %v", path, err)
		}
	})
}
