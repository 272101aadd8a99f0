// Package rounds runs the sides of a cost benchmark in interleaved rounds
// inside one boot: the stock side A, its repeat A2 and the patched side B
// (feature.SideA, SideA2, SideB) as sub-benchmarks, once each per round,
// in an order that cycles through all six, so that neither a warm-up nor a
// drift over the rounds favours a side, and A2 against A (the A/A floor)
// meets the same order effects as B against A. The rounds are a loop here,
// as many as feature.RoundsEnv says: go test -count would repeat each side
// in a block of its own.
package rounds

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// Run runs Count rounds of b's sides: stock as SideA and SideA2, patched as
// SideB, each round in the next of feature.SideOrders.
func Run(b *testing.B, stock, patched func(*testing.B)) {
	b.Helper()
	n, err := Count()
	if err != nil {
		b.Fatal(err)
	}
	for k := range n {
		for _, side := range Order(k) {
			f := stock
			if side == feature.SideB {
				f = patched
			}
			b.Run(side, f)
		}
	}
}

// Order is the order of the sides in round k, from 0.
func Order(k int) [3]string { return feature.SideOrders[k%len(feature.SideOrders)] }

// Count is how many rounds feature.RoundsEnv asks for: 1 when it is unset.
func Count() (int, error) {
	v := os.Getenv(feature.RoundsEnv)
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a count of rounds, 1 or more", feature.RoundsEnv, v)
	}
	return n, nil
}
