// Package rounds runs the sides of a cost benchmark in interleaved rounds
// inside one boot: the stock side A, its repeat A2 and the patched side B
// (feature.SideA, SideA2, SideB) as sub-benchmarks, once each per round,
// in an order that cycles through all six, so that neither a warm-up nor a
// drift over the rounds favours a side, and A2 against A (the A/A floor)
// meets the same order effects as B against A. go test -count N runs the
// calling benchmark N times: N rounds.
package rounds

import (
	"sync"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

var (
	mu sync.Mutex
	// started counts the rounds each benchmark (by full name) began.
	started = map[string]int{}
)

// Run runs one round of b's sides: stock as SideA and SideA2, patched as
// SideB. Each call for the same b.Name() is the next round.
func Run(b *testing.B, stock, patched func(*testing.B)) {
	b.Helper()
	for _, side := range Order(b.Name()) {
		f := stock
		if side == feature.SideB {
			f = patched
		}
		b.Run(side, f)
	}
}

// Order returns the order of the sides for the next round of name, and
// counts the round.
func Order(name string) [3]string {
	mu.Lock()
	defer mu.Unlock()
	k := started[name]
	started[name]++
	return feature.SideOrders[k%len(feature.SideOrders)]
}
