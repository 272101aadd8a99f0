package instrument

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// Losses follows what one tracer loses from when it is made: runs of its
// programs the kernel skipped (Misses) and hits of its kprobes and
// kretprobes the kernel missed (ProbeMisses).
type Losses struct {
	progs  []*ebpf.Program
	probes map[string]link.Link
	base   map[string]uint64
}

// NewLosses follows progs and the probe links in probes (named by what
// they trace) from now.
func NewLosses(progs []*ebpf.Program, probes map[string]link.Link) (*Losses, error) {
	l := &Losses{progs: progs, probes: probes}
	base, err := l.read()
	if err != nil {
		return nil, err
	}
	l.base = base
	return l, nil
}

func (l *Losses) read() (map[string]uint64, error) {
	n := map[string]uint64{}
	for _, p := range l.progs {
		m, err := Misses(p)
		if err != nil {
			return nil, err
		}
		n[p.String()+" skipped"] = m
	}
	for what, pl := range l.probes {
		m, err := ProbeMisses(pl)
		if err != nil {
			return nil, err
		}
		n[what+" missed"] = m
	}
	return n, nil
}

// Since returns what was lost since NewLosses, by what lost it; a tracer
// that lost nothing gives an empty map.
func (l *Losses) Since() (map[string]uint64, error) {
	now, err := l.read()
	if err != nil {
		return nil, err
	}
	lost := map[string]uint64{}
	for what, n := range now {
		if n > l.base[what] {
			lost[what] = n - l.base[what]
		}
	}
	return lost, nil
}

// Sum adds up lost, and names each count, in a stable order.
func Sum(lost map[string]uint64) (uint64, string) {
	var n uint64
	var named []string
	for _, what := range slices.Sorted(maps.Keys(lost)) {
		n += lost[what]
		named = append(named, fmt.Sprintf("%s %d", what, lost[what]))
	}
	return n, strings.Join(named, ", ")
}

// WatchLosses makes tb, when it ends, an instrument fault naming what the
// tracer (what) lost since l was made. Call it once the tracer is
// attached, after the cleanup that closes it is registered, so that the
// check runs first.
func WatchLosses(tb testing.TB, what string, l *Losses) {
	tb.Helper()
	tb.Cleanup(func() {
		lost, err := l.Since()
		if err != nil {
			observe.Lost(tb, "%s: %v", what, err)
			return
		}
		if n, named := Sum(lost); n > 0 {
			observe.Lost(tb, "%s lost %d events (%s): its counts are short", what, n, named)
		}
	})
}
