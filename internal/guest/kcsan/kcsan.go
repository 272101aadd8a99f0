// Package kcsan reads the kernel's data race detector, KCSAN, from a
// test: whether it runs, and what it did while a race test of a seed's
// barriers raced (kernel/kcsan/debugfs.c's counters). On a KCSAN kernel
// those tests race longer (For), and record how many handshakes they drove
// (Report), so that a run without a report says how much was watched.
package kcsan

import (
	"fmt"
	"time"
)

// Counters are KCSAN's own tallies since boot.
type Counters struct {
	// Watchpoints is how many watchpoints it set up (setup_watchpoints):
	// each delays its access and looks for another CPU's conflicting one.
	Watchpoints uint64
	// Races is how many data races it found (data_races), reported or
	// not (a race is reported once per KCSAN_REPORT_ONCE_IN_MS).
	Races uint64
}

// Sub is c less an earlier reading.
func (c Counters) Sub(o Counters) Counters {
	return Counters{Watchpoints: c.Watchpoints - o.Watchpoints, Races: c.Races - o.Races}
}

// raceFor is how long a race test races each of its cases on a KCSAN
// kernel, at least: KCSAN watches about one memory access in
// skip_watch per CPU, so a race must run long enough for its handshake's
// accesses to be watched thousands of times (docs/design/kcsan-barriers.md
// has the figures behind it).
const raceFor = 30 * time.Second

// For is how long a race test whose cases race d each races them here: d,
// or raceFor on a kernel that runs KCSAN.
func For(d time.Duration) time.Duration {
	if !Active() {
		return d
	}
	return max(d, raceFor)
}

// Why says what KCSAN did during a race of d: the counters' change.
func Why(d time.Duration, c Counters) string {
	return fmt.Sprintf("KCSAN, %v: %d watchpoints set up, %d data races found", d.Round(time.Millisecond),
		c.Watchpoints, c.Races)
}
