// Package heartbeat calls a function at a steady period until stopped: the
// line a long step (a kernel build, a suite in a VM) prints to show it is
// alive where no terminal shows a spinner, as in CI logs.
package heartbeat

import "time"

// Start calls beat every period, with the time since Start, until the
// returned stop is called. stop waits for a beat under way to end.
func Start(period time.Duration, beat func(elapsed time.Duration)) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(ended)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				beat(time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done); <-ended }
}
