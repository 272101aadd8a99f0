package rounds

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// TestOrderBalanced: six rounds put every side in every position exactly
// twice, and the names count apart.
func TestOrderBalanced(t *testing.T) {
	pos := map[string][3]int{}
	for range 6 {
		o := Order("BenchmarkX/a")
		for i, s := range o {
			p := pos[s]
			p[i]++
			pos[s] = p
		}
	}
	for _, s := range []string{feature.SideA, feature.SideA2, feature.SideB} {
		assert.Equal(t, pos[s], [3]int{2, 2, 2}, "positions of %s over six rounds", s)
	}
	assert.Equal(t, Order("BenchmarkX/b"), feature.SideOrders[0], "another benchmark starts at round 0")
	assert.Equal(t, Order("BenchmarkX/a"), feature.SideOrders[0], "round 7 starts the cycle again")
}
