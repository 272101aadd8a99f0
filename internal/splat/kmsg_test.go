package splat

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestKmsgRecord(t *testing.T) {
	text, line, ok := KmsgRecord("4,1234,13784785,-;WARNING: CPU: 1 PID: 7 at net/core/dev.c:4302\n SUBSYSTEM=net\n")
	assert.Check(t, ok)
	assert.Check(t, is.Equal(text, "WARNING: CPU: 1 PID: 7 at net/core/dev.c:4302"))
	assert.Check(t, is.Equal(line, "[   13.784785] WARNING: CPU: 1 PID: 7 at net/core/dev.c:4302"))
	_, _, ok = KmsgRecord("no record")
	assert.Check(t, !ok)
}
