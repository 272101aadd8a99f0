package feature

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestParseMark(t *testing.T) {
	for _, tc := range []struct {
		text string
		kind MarkKind
		name string
	}{
		{"xmitcheck mark: test start TestA/sub one", TestStart, "TestA/sub one"},
		{"xmitcheck mark: test end TestA", TestEnd, "TestA"},
		{"xmitcheck mark: binary start example.org/suites/tun", BinaryStart, "example.org/suites/tun"},
		{" xmitcheck mark: binary exit example.org/suites/tun\r", BinaryExit, "example.org/suites/tun"},
	} {
		k, n, ok := ParseMark(tc.text)
		assert.Check(t, ok, tc.text)
		assert.Check(t, is.Equal(k, tc.kind))
		assert.Check(t, is.Equal(n, tc.name))
	}
	for _, text := range []string{"xmitcheck mark: test start ", "xmitcheck mark: lunch TestA", "WARNING: CPU: 0"} {
		_, _, ok := ParseMark(text)
		assert.Check(t, !ok, text)
	}
}
