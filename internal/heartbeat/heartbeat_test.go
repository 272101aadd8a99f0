package heartbeat

import (
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestBeatsUntilStopped(t *testing.T) {
	var n atomic.Int32
	stop := Start(time.Millisecond, func(time.Duration) { n.Add(1) })
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() < 3 {
		assert.Assert(t, time.Now().Before(deadline), "3 beats of 1 ms took over 5 s")
		time.Sleep(time.Millisecond)
	}
	stop()
	after := n.Load()
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, n.Load(), after, "no beat after stop returned")
}
