package counters

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestAccounting(t *testing.T) {
	a := Accounting{Sent: 100, Received: 60, DeviceDrops: 10, QdiscDrops: 5, QdiscBacklog: 20, InDevice: 5}
	assert.Assert(t, a.Balanced())
	a.Received--
	assert.Assert(t, !a.Balanced())
	assert.Equal(t, a.String(),
		"sent 100 != received 59 + device drops 10 + qdisc drops 5 + qdisc backlog 20 + in device 5")
	a.Uncounted, a.UncountedWhy = 1, "ring purged"
	assert.Assert(t, a.Balanced())
	assert.Equal(t, a.String(),
		"sent 100 == received 59 + device drops 10 + qdisc drops 5 + qdisc backlog 20 + in device 5"+
			" + uncounted 1 (ring purged)")
}

func TestAccountingMaybeCounted(t *testing.T) {
	// A kernel that counts nowhere the 8 burst drops it freed.
	nowhere := Accounting{
		Sent: 100, Received: 80, QdiscDrops: 12,
		Uncounted: 8, UncountedWhy: "burst drops", MaybeCounted: true,
	}
	assert.Check(t, nowhere.Balanced())
	// One that counts them in tx_dropped.
	fixed := nowhere
	fixed.DeviceDrops = 8
	assert.Check(t, fixed.Balanced())
	assert.Check(t, is.Equal(fixed.String(),
		"sent 100 == received 80 + device drops 8 + qdisc drops 12 + qdisc backlog 0 + in device 0"+
			" (the 8 burst drops are in those counters on this kernel)"))
	// Either way a frame short fails.
	for _, a := range []Accounting{nowhere, fixed} {
		a.Received--
		assert.Check(t, !a.Balanced(), a)
	}
	// Without MaybeCounted the fixed kernel counts them twice.
	fixed.MaybeCounted = false
	assert.Check(t, !fixed.Balanced())
	// Nothing uncounted, nothing to move.
	none := Accounting{Sent: 10, Received: 9, MaybeCounted: true}
	assert.Check(t, !none.Balanced())
}

func TestWaitForReportsLastValue(t *testing.T) {
	n := 0
	get := func() (int, error) { n++; return n, nil }
	v, err := WaitFor(context.Background(), 20*time.Millisecond, get, func(v int) bool { return v < 0 })
	assert.ErrorContains(t, err, "last observed")
	assert.Assert(t, v > 0)

	v, err = WaitFor(context.Background(), time.Second, get, func(v int) bool { return v >= n && v > 3 })
	assert.NilError(t, err)
	assert.Assert(t, v > 3)

	boom := errors.New("boom")
	fails := func() (int, error) { return 0, boom }
	_, err = WaitFor(context.Background(), time.Second, fails, func(int) bool { return true })
	assert.ErrorIs(t, err, boom)
}

func TestWaitSteady(t *testing.T) {
	n := 0
	moving := func() (int, error) { n++; return n, nil }
	_, err := WaitSteady(context.Background(), 50*time.Millisecond, 10*time.Millisecond, moving)
	assert.ErrorContains(t, err, "last observed")

	still := func() (int, error) { return 7, nil }
	v, err := WaitSteady(context.Background(), time.Second, 10*time.Millisecond, still)
	assert.NilError(t, err)
	assert.Equal(t, v, 7)
}

func TestWaitMoving(t *testing.T) {
	n := 0
	draining := func() (int, error) { n++; return n, nil }
	v, err := WaitMoving(context.Background(), time.Second, 50*time.Millisecond, draining,
		func(v int) bool { return v >= 20 })
	assert.NilError(t, err)
	assert.Equal(t, v, 20)

	start := time.Now()
	stuck := func() (int, error) { return 7, nil }
	_, err = WaitMoving(context.Background(), 10*time.Second, 50*time.Millisecond, stuck,
		func(v int) bool { return v == 0 })
	assert.ErrorContains(t, err, "nothing moved for")
	assert.ErrorContains(t, err, "last observed: 7")
	assert.Check(t, time.Since(start) < time.Second, "gave up after %v, not at the 50ms still bound",
		time.Since(start))

	n = 0
	slow := func() (int, error) { n++; return n / 10, nil } // moves every 10 polls (20 ms)
	_, err = WaitMoving(context.Background(), 100*time.Millisecond, time.Second, slow,
		func(int) bool { return false })
	assert.ErrorContains(t, err, "waited 100ms", "a value that moves waits out the timeout")
}

func TestBoundedAndHold(t *testing.T) {
	Bounded(t, time.Second, "a quick step", func() error { return nil })
	Hold(t, 20*time.Millisecond, "nothing moves", func() error { return nil })

	ft := &fatalRecorder{T: t}
	func() {
		defer func() { recover() }()
		n := 0
		Hold(ft, time.Second, "a counter that moves", func() error {
			if n++; n > 3 {
				return fmt.Errorf("moved to %d", n)
			}
			return nil
		})
	}()
	assert.Check(t, is.Contains(ft.msg, "a counter that moves: moved to 4"))

	n := 0
	get := func() (int, error) { n++; return n, nil }
	last := Holds(t, 20*time.Millisecond, "a state that stays", get, func(int) bool { return true })
	assert.Check(t, is.Equal(last, n), "the last value read")
	func() {
		defer func() { recover() }()
		n = 0
		Holds(ft, time.Second, "a state that moves", get, func(v int) bool { return v < 3 })
	}()
	assert.Check(t, is.Contains(ft.msg, "a state that moves: did not hold: 3"))
}

// fatalRecorder keeps what Fatalf said and stops the calling function.
type fatalRecorder struct {
	*testing.T
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
