package feature

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestProfileLine: a profile line survives go test's log prefix, is no
// record, and is a protocol line like the margins line.
func TestProfileLine(t *testing.T) {
	p := Profile{Setup: 3 * time.Second, Traffic: time.Millisecond, Teardown: 20 * time.Millisecond}
	line := "    rig_test.go:12: " + ProfileLine(p)
	got, ok := ParseProfile(line)
	assert.Assert(t, ok)
	assert.Check(t, is.Equal(got, p))
	assert.Check(t, is.Equal(got.Sum(), 3021*time.Millisecond))
	assert.Check(t, is.Equal(got.Add(p), Profile{Setup: 6 * time.Second, Traffic: 2 * time.Millisecond,
		Teardown: 40 * time.Millisecond}))
	_, record := ParseRecord(line)
	assert.Check(t, !record, "a profile line is not a record")
	assert.Check(t, IsProtocolLine(line))
	assert.Check(t, IsProtocolLine(MarginsLine(nil)))
	assert.Check(t, !IsProtocolLine(Record{Seed: Seed004}.String()))
	_, ok = ParseProfile(Record{Seed: Seed004}.String())
	assert.Check(t, !ok)
}
