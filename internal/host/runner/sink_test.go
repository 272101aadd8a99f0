package runner

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/vmtest"
)

// TestActivity: the heartbeat says booting only before a boot's first
// binary, and otherwise what runs or that nothing does.
func TestActivity(t *testing.T) {
	const pkg = "github.com/xmitcheck/xmitcheck/suites/tun"
	s := &resultSink{run: results.NewRun("debian:7.3")}
	assert.Equal(t, s.activity(), "booting")
	bin := vmtest.Binary{Name: pkg}
	s.Start(bin)
	assert.Equal(t, s.activity(), "running suites/tun, between tests")
	s.add(results.Event{Action: "run", Package: pkg, Test: "TestRace"})
	assert.Equal(t, s.activity(), "running suites/tun TestRace")
	s.add(results.Event{Action: "pass", Package: pkg, Test: "TestRace"})
	s.Exit(bin, 0)
	assert.Equal(t, s.activity(), "between test binaries")
	s.newBoot()
	assert.Equal(t, s.activity(), "booting")
}
