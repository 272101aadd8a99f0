package cpumeter

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// TestBusyCounts: 300 ms of spinning shows as at least 200 ms of busy
// CPU (the ticks are 10 ms; the scheduler may lend the spin's CPU out).
func TestBusyCounts(t *testing.T) {
	m, err := Start()
	assert.NilError(t, err)
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	u, err := m.Stop()
	assert.NilError(t, err)
	assert.Assert(t, u.Busy >= 200*time.Millisecond, "busy %v after a 300 ms spin", u.Busy)
	if u.HasInstructions {
		assert.Assert(t, u.Instructions > 1e6, "%d instructions in a 300 ms spin", u.Instructions)
	} else {
		t.Logf("no instructions counter: %s", u.NoPMU)
	}
}
