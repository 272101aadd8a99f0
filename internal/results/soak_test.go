package results

import (
	"bytes"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

func TestWriteSoak(t *testing.T) {
	round := func(race string) []*Run {
		return []*Run{judged(t, "003", nil, []string{"TestA", "pass", tag(feature.Seed003)}, []string{"TestRace", race, tag(feature.Seed003), "race_test.go:9: lost 3 frames"})}
	}
	var b bytes.Buffer
	assert.Check(t, WriteSoak(&b, [][]*Run{round("pass"), round("pass")}))
	assert.Check(t, is.Contains(b.String(), "every verdict and every test the same"))

	b.Reset()
	assert.Check(t, !WriteSoak(&b, [][]*Run{round("pass"), round("fail"), round("pass")}))
	assert.Check(t, is.Contains(b.String(), "verdict of 003 changed: BROKEN in rounds 2 (suites/tun.TestRace: a_test.go:7: race_test.go:9: lost 3 frames); present in rounds 1 3"))
	assert.Check(t, is.Contains(b.String(), "flaky suites/tun.TestRace: fail in rounds 2 (a_test.go:7: race_test.go:9: lost 3 frames); pass in rounds 1 3"))
}
