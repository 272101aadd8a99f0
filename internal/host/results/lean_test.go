package results

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/host/expect"
)

// TestLeansOn: a test of 003 that runs over a backpressure tap and fails
// where 000-tun is BROKEN is reported under 000-tun and leaves 003 to its
// tests on independent devices: error when they pass, BROKEN when they
// fail too. Where 000-tun is not BROKEN, the failure is 003's.
func TestLeansOn(t *testing.T) {
	overTap := feature.Record{Uses: feature.Seed000Tun, Why: "a tap with IFF_BACKPRESSURE"}.String()
	tunFails := []string{"TestWake", "fail", tag(feature.Seed000Tun), "wake_test.go:9: the queue never woke"}
	tunPasses := []string{"TestWake", "pass", tag(feature.Seed000Tun), shows(feature.Seed000Tun)}
	qdisc := func(veth string) [][]string {
		return [][]string{
			{"TestFastPath", "pass", tag(feature.Seed003), shows(feature.Seed003)},
			{"TestNoStranded", "fail", tag(feature.Seed003)},
			{"TestNoStranded/tap", "fail", overTap, "nostall_test.go:5: frames stranded"},
			{"TestNoStranded/veth", veth, "nostall_test.go:5: frames stranded"},
		}
	}
	for _, tc := range []struct {
		name      string
		tun       []string
		veth      string
		tap, q003 State
		why003    string
	}{
		{"000-tun BROKEN, veth passes", tunFails, "pass", Broken, Error, "suites/tun.TestNoStranded/tap: not judged: " +
			"it runs over the machinery of 000-tun, BROKEN on this kernel (its failure is reported there)"},
		{"000-tun BROKEN, veth fails too", tunFails, "fail", Broken, Broken,
			"suites/tun.TestNoStranded/veth: a_test.go:7: nostall_test.go:5: frames stranded"},
		{"000-tun present", tunPasses, "pass", Present, Broken,
			"suites/tun.TestNoStranded/tap: a_test.go:7: nostall_test.go:5: frames stranded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := stream(nil, append([][]string{tc.tun}, qdisc(tc.veth)...)...)
			r.Judge(expect.Expectation{}, "test")
			tun, _ := r.verdict(feature.Seed000Tun)
			assert.Check(t, is.Equal(tun.State, tc.tap))
			q, _ := r.verdict(feature.Seed003)
			assert.Check(t, is.Equal(q.State, tc.q003))
			assert.Check(t, is.Equal(q.Why, tc.why003))
			if tc.tap == Broken && tc.veth == "pass" {
				assert.Check(t, is.Contains(tun.Why, "(and over it 1 failed test of other seeds, first "+
					"suites/tun.TestNoStranded/tap)"))
			}
		})
	}
}
