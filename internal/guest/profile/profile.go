// Package profile accounts for where each test's time goes: the shared
// helpers mark their calls as setup (namespaces, links, taps, BPF objects),
// traffic (sending, reading) or waits (bounded polls), and the time from a
// test's end to the end of its cleanups is its teardown. When a test ends,
// its own totals (not its subtests') are one line on its log
// (feature.ProfileLine); the host sums them per test tree
// (xmitcheck bench profile).
//
// A call counts for the innermost running test that a helper has seen.
// Calls that overlap (a sender goroutine during a wait, a wait inside a
// setup step) count once, for the first kind in the order setup, waits,
// traffic, so a test's parts never add up to more than its time.
package profile

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// Kind is what a helper's call spends time on.
type Kind int32

const (
	Setup   Kind = iota // namespaces, links, qdiscs, taps, sockets, BPF objects
	Traffic             // frames sent and read
	Waits               // bounded waits for the kernel to reach or keep a state
	kinds
)

// test is the profile of one running test.
type test struct {
	name string
	// state packs, for one CAS, the calls in progress of each kind
	// (depthBits each) and the time of the last change in microseconds
	// since epoch (the bits above): the time since the last change counts
	// for the first kind of priority with a call in progress.
	state atomic.Uint64
	sums  [kinds]atomic.Int64
	// teardown is when the test's cleanups began (ns since epoch), 0
	// before; calls count up to it.
	teardown atomic.Int64
}

const (
	depthBits = 6
	depthMax  = 1<<depthBits - 1
	timeShift = depthBits * int(kinds)
)

// priority orders the kinds whose calls overlap: a wait on the test's
// goroutine while a sender runs beside it is a wait.
var priority = [...]Kind{Setup, Waits, Traffic}

var (
	// epoch makes times int64 for the atomics; time.Since keeps them
	// monotonic.
	epoch = time.Now()
	// byName holds the running tests' profiles; go test names are unique
	// among running tests.
	byName sync.Map // string → *test
	// innermost is the deepest running test, for calls that name none.
	innermost atomic.Pointer[test]
	// mu guards live, the running tests' profiles in the order they began.
	mu   sync.Mutex
	live []*test
)

func now() int64 { return int64(time.Since(epoch)) }

// Span is one helper call being timed; End ends it.
type Span struct {
	t    *test // nil: a call that counts nowhere
	kind Kind
}

// Start times a call that tb's test (or the innermost running test under
// it) spends on k: defer profile.Start(tb, profile.Setup).End().
func Start(tb testing.TB, k Kind) Span {
	t := of(tb)
	// A parent's tb used inside a running subtest: the subtest spends it.
	if in := innermost.Load(); t != nil && in != nil && in != t && strings.HasPrefix(in.name, t.name+"/") {
		t = in
	}
	return t.start(k)
}

// Begin starts tb's profile, if no helper has yet: its teardown then
// includes every cleanup registered after this call.
func Begin(tb testing.TB) { of(tb) }

// Running times a call that names no test (a sender, a reader, a wait on
// a context) for the innermost running test; nothing when none runs.
func Running(k Kind) Span {
	return innermost.Load().start(k)
}

func (t *test) start(k Kind) Span {
	// No test, or its teardown, which counts whole, its calls included.
	if t == nil || t.teardown.Load() != 0 || !t.move(k, 1) {
		return Span{}
	}
	return Span{t: t, kind: k}
}

// End adds the call's time to its test, up to the start of the teardown.
func (s Span) End() {
	if s.t != nil {
		s.t.move(s.kind, -1)
	}
}

// move counts one more (delta 1) or one fewer (-1) call of k in progress,
// and gives the time since the last change to the kind it was spent on.
// It refuses a call beyond depthMax of a kind, which then goes uncounted.
func (t *test) move(k Kind, delta int) bool {
	shift := depthBits * int(k)
	for {
		old := t.state.Load()
		if delta > 0 && old>>shift&depthMax == depthMax {
			return false
		}
		depths := old & (1<<timeShift - 1)
		if delta > 0 {
			depths += 1 << shift
		} else {
			depths -= 1 << shift
		}
		us := now() / 1e3
		if !t.state.CompareAndSwap(old, uint64(us)<<timeShift|depths) {
			continue
		}
		last := int64(old >> timeShift)
		if td := t.teardown.Load(); td != 0 {
			us = min(us, td/1e3)
		}
		spent := us - last
		for _, p := range priority {
			if old>>(depthBits*int(p))&depthMax != 0 && spent > 0 {
				t.sums[p].Add(spent * 1e3)
				break
			}
		}
		return true
	}
}

// of is tb's profile, begun on the first call: its cleanup, registered
// first and so run last, prints the profile. A test whose cleanups have
// begun gets none (nil): its teardown, or a goroutine it left behind.
func of(tb testing.TB) *test {
	name := tb.Name()
	if t, ok := byName.Load(name); ok {
		return t.(*test)
	}
	mu.Lock()
	defer mu.Unlock()
	if t, ok := byName.Load(name); ok {
		return t.(*test)
	}
	if tb.Context().Err() != nil {
		return nil
	}
	t := &test{name: name}
	byName.Store(name, t)
	live = append(live, t)
	innermost.Store(deepest())
	// The context ends just before the first cleanup runs.
	context.AfterFunc(tb.Context(), func() { t.teardown.CompareAndSwap(0, now()) })
	tb.Cleanup(func() { t.end(tb) })
	return t
}

// end prints t's profile and forgets t.
func (t *test) end(tb testing.TB) {
	end := now()
	td := t.teardown.Load()
	if td == 0 || td > end {
		td = end // the context's goroutine has not run yet
	}
	mu.Lock()
	byName.Delete(t.name)
	for i, l := range live {
		if l == t {
			live = append(live[:i], live[i+1:]...)
			break
		}
	}
	innermost.Store(deepest())
	mu.Unlock()
	emit(tb, t.profile(end-td))
}

// emit prints a test's profile on its log; the tests of this package
// collect them instead.
var emit = func(tb testing.TB, p feature.Profile) {
	tb.Helper()
	tb.Log(feature.ProfileLine(p))
}

func (t *test) profile(teardown int64) feature.Profile {
	return feature.Profile{
		Setup:    time.Duration(t.sums[Setup].Load()),
		Traffic:  time.Duration(t.sums[Traffic].Load()),
		Waits:    time.Duration(t.sums[Waits].Load()),
		Teardown: time.Duration(teardown),
	}
}

// deepest is the running test with the most levels, the latest of those
// (subtests run in parallel: the one that began last). mu is held.
func deepest() *test {
	var out *test
	for _, t := range live {
		if out == nil || strings.Count(t.name, "/") >= strings.Count(out.name, "/") {
			out = t
		}
	}
	return out
}
