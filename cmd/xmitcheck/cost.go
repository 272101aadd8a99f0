package main

import (
	"flag"

	"github.com/xmitcheck/xmitcheck/internal/host/results"
	"github.com/xmitcheck/xmitcheck/internal/host/runner"
)

// registerCost registers run's cost pass: the seeds' cost claims measured
// on each kernel, in one boot, after its tests (docs/cost.md).
func registerCost(fs *flag.FlagSet, c *runner.Cost) {
	fs.BoolVar(&c.On, "cost", false, "also measure the seeds' cost claims on each kernel, A/B in one boot (docs/cost.md)")
	fs.IntVar(&c.Rounds, "rounds", 10, "interleaved rounds of the cost pass (each runs A, A2 and B once)")
	fs.StringVar(&c.Benchtime, "cost-benchtime", "100000x",
		"go test -benchtime of the cost pass: frames per side and round")
}

// costExit is exitFail when a cost row regressed.
func costExit(runs []*results.Run) int {
	for _, r := range runs {
		if r.CostRegressed() {
			return exitFail
		}
	}
	return exitOK
}
