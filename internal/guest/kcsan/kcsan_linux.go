package kcsan

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// debugfs is KCSAN's file: "enabled: 1" and its counters, "name: value".
const debugfs = "/sys/kernel/debug/kcsan"

// module holds KCSAN's parameters wherever it is built in, debugfs or not.
const module = "/sys/module/kcsan/parameters"

var active = sync.OnceValue(func() bool {
	if data, err := os.ReadFile(debugfs); err == nil {
		return strings.HasPrefix(string(data), "enabled: 1")
	}
	_, err := os.Stat(module)
	return err == nil
})

// Active reports whether the kernel runs KCSAN: built in (kernels build
// --debug kcsan) and enabled.
func Active() bool { return active() }

// Read reads KCSAN's counters.
func Read() (Counters, error) {
	f, err := os.Open(debugfs)
	if err != nil {
		return Counters{}, fmt.Errorf("KCSAN's counters: %w", err)
	}
	defer f.Close()
	var c Counters
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ": ")
		n, err := strconv.ParseUint(value, 10, 64)
		if !ok || err != nil {
			continue
		}
		switch name {
		case "setup_watchpoints":
			c.Watchpoints = n
		case "data_races":
			c.Races = n
		}
	}
	return c, sc.Err()
}

// Watch starts watching a race of tb on a KCSAN kernel: the returned
// function records (observe.Raced) the n handshakes of seed the race drove,
// with how long it raced and what KCSAN did meanwhile (when its counters
// can be read: debugfs). Elsewhere it does nothing.
func Watch(tb testing.TB, seed feature.Seed) func(n uint64) {
	tb.Helper()
	if !Active() {
		return func(uint64) {}
	}
	before, berr := Read()
	start := time.Now()
	return func(n uint64) {
		tb.Helper()
		after, err := Read()
		why := Why(time.Since(start), after.Sub(before))
		if err = errors.Join(berr, err); err != nil {
			why = fmt.Sprintf("KCSAN, %v: %v", time.Since(start).Round(time.Millisecond), err)
		}
		observe.Raced(tb, seed, n, why)
	}
}
