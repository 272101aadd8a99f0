package profile

import (
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// collect runs fn as subtest name and returns the profiles every test
// under it printed, by name.
func collect(t *testing.T, name string, fn func(t *testing.T)) map[string]feature.Profile {
	t.Helper()
	var mu sync.Mutex
	got := map[string]feature.Profile{}
	saved := emit
	emit = func(tb testing.TB, p feature.Profile) {
		mu.Lock()
		defer mu.Unlock()
		got[tb.Name()] = got[tb.Name()].Add(p)
	}
	defer func() { emit = saved }()
	t.Run(name, fn)
	return got
}

func spend(tb testing.TB, k Kind, d time.Duration) {
	defer Start(tb, k).End()
	time.Sleep(d)
}

func TestKinds(t *testing.T) {
	var wall time.Duration
	got := collect(t, "kinds", func(t *testing.T) {
		start := time.Now()
		spend(t, Setup, 20*time.Millisecond)
		func() {
			defer Running(Traffic).End()
			spend(t, Waits, 10*time.Millisecond) // inside the traffic call: a wait
			time.Sleep(10 * time.Millisecond)
		}()
		spend(t, Waits, 10*time.Millisecond)
		time.Sleep(10 * time.Millisecond) // none of them: other
		wall = time.Since(start)
	})
	p := got[t.Name()+"/kinds"]
	assert.Check(t, p.Setup >= 20*time.Millisecond, "%+v", p)
	assert.Check(t, p.Traffic >= 10*time.Millisecond && p.Traffic < 20*time.Millisecond, "%+v", p)
	assert.Check(t, p.Waits >= 20*time.Millisecond, "%+v", p)
	assert.Check(t, p.Sum() <= wall, "%+v: more than the test's %v", p, wall)
}

// TestOverlap: a wait on the test's goroutine while a sender runs beside
// it counts as a wait, the rest of the sender's time as traffic, and the
// parts never add up to more than the time they cover.
func TestOverlap(t *testing.T) {
	var wall time.Duration
	got := collect(t, "overlap", func(t *testing.T) {
		Start(t, Setup).End() // the test is seen: the sender's calls are its
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 3 {
				func() {
					defer Running(Traffic).End()
					time.Sleep(20 * time.Millisecond)
				}()
			}
		}()
		time.Sleep(5 * time.Millisecond)
		spend(t, Waits, 30*time.Millisecond)
		<-done
		wall = time.Since(start)
	})
	p := got[t.Name()+"/overlap"]
	assert.Check(t, p.Waits >= 30*time.Millisecond, "%+v", p)
	assert.Check(t, p.Traffic >= 20*time.Millisecond, "%+v", p)
	assert.Check(t, p.Setup+p.Traffic+p.Waits <= wall, "%+v: more than the %v they cover", p, wall)
}

// TestInnermost: a call that names no test, or names the parent while a
// subtest runs, counts for the subtest; after it, for the parent again.
func TestInnermost(t *testing.T) {
	got := collect(t, "parent", func(t *testing.T) {
		spend(t, Setup, 10*time.Millisecond)
		t.Run("child", func(c *testing.T) {
			spend(c, Setup, time.Millisecond)
			spend(t, Setup, 20*time.Millisecond)
			func() {
				defer Running(Traffic).End()
				time.Sleep(20 * time.Millisecond)
			}()
		})
		func() {
			defer Running(Waits).End()
			time.Sleep(10 * time.Millisecond)
		}()
	})
	parent, child := got[t.Name()+"/parent"], got[t.Name()+"/parent/child"]
	assert.Check(t, parent.Setup >= 10*time.Millisecond && parent.Setup < 20*time.Millisecond, "%+v", parent)
	assert.Check(t, parent.Waits >= 10*time.Millisecond && parent.Traffic == 0, "%+v", parent)
	assert.Check(t, child.Setup >= 21*time.Millisecond && child.Traffic >= 20*time.Millisecond, "%+v", child)
	assert.Check(t, child.Waits == 0, "%+v", child)
	assert.Check(t, innermost.Load() == nil, "no test runs: no innermost")
}

// TestTeardown: the cleanups are the teardown, and the calls they make
// count in it only.
func TestTeardown(t *testing.T) {
	got := collect(t, "teardown", func(t *testing.T) {
		Start(t, Setup).End()
		t.Cleanup(func() { spend(t, Setup, 30*time.Millisecond) })
	})
	p := got[t.Name()+"/teardown"]
	assert.Check(t, p.Teardown >= 30*time.Millisecond, "%+v", p)
	assert.Check(t, p.Setup < 30*time.Millisecond, "%+v: a cleanup's call counted as setup", p)
}

// TestEnded: a call for a test whose cleanups began, first seen there,
// begins no profile and counts nowhere.
func TestEnded(t *testing.T) {
	got := collect(t, "ended", func(t *testing.T) {
		t.Cleanup(func() { spend(t, Setup, time.Millisecond) })
	})
	assert.Check(t, is.Len(got, 0))
	assert.Check(t, innermost.Load() == nil)
}

func TestNoTest(t *testing.T) {
	s := Running(Setup) // nothing runs that a helper has seen
	assert.Check(t, s.t == nil)
	s.End()
}

// BenchmarkSpan is the cost of one marked call: Running, End.
func BenchmarkSpan(b *testing.B) {
	Start(b, Setup).End() // b is the innermost running test
	for b.Loop() {
		Running(Traffic).End()
	}
}
