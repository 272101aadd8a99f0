package rounds

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// TestOrderBalanced: six rounds put every side in every position exactly
// twice, and round 7 starts the cycle again.
func TestOrderBalanced(t *testing.T) {
	pos := map[string][3]int{}
	for k := range 6 {
		for i, s := range Order(k) {
			p := pos[s]
			p[i]++
			pos[s] = p
		}
	}
	for _, s := range []string{feature.SideA, feature.SideA2, feature.SideB} {
		assert.Equal(t, pos[s], [3]int{2, 2, 2}, "positions of %s over six rounds", s)
	}
	assert.Equal(t, Order(6), Order(0))
}

// TestRunInterleaves runs a benchmark of three rounds: the sides come
// interleaved, a round at a time in its order, not each in a block.
func TestRunInterleaves(t *testing.T) {
	t.Setenv(feature.RoundsEnv, "3")
	var got []string
	// Each side's first call has b.N 1; testing.Benchmark calls it again
	// with more, which is not another round.
	side := func(name string) func(*testing.B) {
		return func(b *testing.B) {
			if b.N == 1 {
				got = append(got, name)
			}
		}
	}
	testing.Benchmark(func(b *testing.B) { Run(b, side("A"), side("B")) })
	var want []string
	for k := range 3 {
		for _, s := range Order(k) {
			want = append(want, map[string]string{feature.SideA: "A", feature.SideA2: "A", feature.SideB: "B"}[s])
		}
	}
	assert.Check(t, is.DeepEqual(got, want))
}

func TestCount(t *testing.T) {
	t.Setenv(feature.RoundsEnv, "")
	n, err := Count()
	assert.NilError(t, err)
	assert.Equal(t, n, 1)
	t.Setenv(feature.RoundsEnv, "zero")
	_, err = Count()
	assert.ErrorContains(t, err, `XMITCHECK_COST_ROUNDS="zero": want a count of rounds`)
}
