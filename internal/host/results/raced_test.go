package results

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// TestRaced: the handshakes a race drove under KCSAN are listed per test,
// in the notes too, and leave the verdict to the tests.
func TestRaced(t *testing.T) {
	raced := feature.Record{Raced: feature.Seed000Tun, Handshakes: 41234,
		Why: "KCSAN, 30s: 91234 watchpoints set up, 0 data races found"}.String()
	r := stream(nil,
		[]string{"TestBackpressure", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)},
		[]string{"TestRaceSmallRing", "pass", tag(feature.Seed000Tun)},
		[]string{"TestRaceSmallRing/ring=1", "pass", raced})
	r.Judge(expect.Expectation{}, "test")
	r.Judge(expect.Expectation{}, "test")
	want := "suites/tun.TestRaceSmallRing/ring=1: 000-tun: 41234 handshakes; " +
		"KCSAN, 30s: 91234 watchpoints set up, 0 data races found"
	assert.Check(t, is.DeepEqual(r.Raced, []string{want}))
	assert.Check(t, is.Contains(r.notes(), "raced under a sanitizer: "+want))
	tun, _ := r.verdict(feature.Seed000Tun)
	assert.Check(t, is.Equal(tun.State, Present))
}
