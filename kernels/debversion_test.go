package kernels

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"6.12.117-1", "6.12.107-1", 1},
		{"6.1.176-1", "6.1.170-3", 1},
		{"7.3.4-1~bpo13+1", "7.3.4-1", -1},
		{"7.3.4-1~bpo13+1", "7.2.12-1~bpo13+1", 1},
		{"7.2.13-1", "7.2.13-1", 0},
		{"1:5.0-1", "6.0-1", 1},
		{"5.10.223-1", "5.10.218-1", 1},
		{"1.0~rc1-1", "1.0-1", -1},
		{"1.0a-1", "1.0-1", 1},
		{"1.0+b1", "1.0", 1},
		{"1.0-1", "1.0-1+b1", -1},
		{"007", "7", 0},
	} {
		got := compareVersions(tc.a, tc.b)
		assert.Check(t, sign(got) == tc.want, "compareVersions(%q, %q) = %d, want sign %d", tc.a, tc.b, got, tc.want)
		back := compareVersions(tc.b, tc.a)
		assert.Check(t, sign(back) == -tc.want, "compareVersions(%q, %q) = %d, want sign %d", tc.b, tc.a, back, -tc.want)
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
