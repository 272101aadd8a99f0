package counters

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/margin"
	"github.com/xmitcheck/xmitcheck/internal/guest/netenv"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Bounded runs step on a goroutine of its own and fails tb when it has not
// returned within limit (noted for its caller in package margin). A
// teardown that blocks (unregistering a device waits in netdev_run_todo
// for its last reference; closing vhost-net flushes its worker) is a hang,
// not a slow step; the goroutine is then left behind.
func Bounded(tb testing.TB, limit time.Duration, what string, step func() error) {
	tb.Helper()
	defer profile.Start(tb, profile.Waits).End()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- step() }()
	select {
	case err := <-done:
		margin.Note(limit, time.Since(start), false)
		assert.NilError(tb, err, "%s", what)
	case <-time.After(limit):
		margin.Note(limit, limit, true)
		tb.Fatalf("%s: not returned after %v (the kernel is stuck in it)", what, limit)
	}
	if d := time.Since(start); d > time.Second {
		tb.Logf("%s took %v", what, d)
	}
}

// Hold checks, for d, that check keeps holding (returns nil): "nothing
// moved" for a state that a softirq could change within microseconds.
func Hold(tb testing.TB, d time.Duration, what string, check func() error) {
	tb.Helper()
	defer profile.Start(tb, profile.Waits).End()
	for end := time.Now().Add(d); ; time.Sleep(PollInterval) {
		if err := check(); err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
		if time.Now().After(end) {
			return
		}
	}
}

// Holds samples get for d and fails tb as soon as ok rejects a value (Hold
// on a state); it returns the last value.
func Holds[T any](tb testing.TB, d time.Duration, what string, get func() (T, error), ok func(T) bool) T {
	tb.Helper()
	var v T
	Hold(tb, d, what, func() error {
		var err error
		if v, err = get(); err == nil && !ok(v) {
			err = fmt.Errorf("did not hold: %v", v)
		}
		return err
	})
	return v
}

// Rounds runs round n times as subtests round=1, round=2, … and checks
// after each that e has, within limit, exactly the sockets it had before
// the first (netenv.Env.SocketsUsed): a teardown that leaks a frame keeps
// its sender's socket alive. A fixed n, not a time budget, so the same
// kernel runs the same subtests on any machine (a soak compares them by
// name). It stops at the first round that fails.
func Rounds(t *testing.T, e *netenv.Env, n int, limit time.Duration, round func(t *testing.T)) {
	t.Helper()
	base, err := e.SocketsUsed()
	assert.NilError(t, err)
	start := time.Now()
	for i := 1; i <= n; i++ {
		if !t.Run(fmt.Sprintf("round=%d", i), round) {
			return
		}
		used, err := WaitFor(context.Background(), limit, e.SocketsUsed, func(u int) bool { return u == base })
		if err != nil {
			t.Fatalf("round %d: the namespace has %d sockets after the teardown, %d before the first round: %v",
				i, used, base, err)
		}
	}
	t.Logf("%d rounds in %v; the namespace has its %d sockets after each",
		n, time.Since(start).Round(time.Millisecond), base)
}
