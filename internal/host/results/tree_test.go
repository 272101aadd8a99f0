package results

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestShortPackage(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/xmitcheck/xmitcheck/suites/tun":        "suites/tun",
		"github.com/xmitcheck/xmitcheck/suites/devmap/sub": "suites/devmap/sub",
		"example.org/other":                                "example.org/other",
		"":                                                 "",
	} {
		assert.Check(t, is.Equal(ShortPackage(in), want), in)
	}
}
