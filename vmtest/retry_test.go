package vmtest

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestRetry(t *testing.T) {
	stale := []Splat{{Kind: "BUG", Lines: []string{
		"Oops: int3: 0000 [#1] PREEMPT SMP NOPTI",
		"RIP: 0010:sched_clock_cpu+0x9/0x1e0",
		"Code: 90 90 90 90 90 90 90 90 90 90 90 90 90 90 90 90 f3 0f 1e fa <e9> 12 00 00 00 55 48",
	}}}
	tcg := &Outcome{Accel: "tcg"}
	var p Retry
	assert.Equal(t, p.After("suites/qdisc", tcg, nil), Record, "a crash without the artefact is the kernel's")
	assert.Equal(t, p.After("suites/qdisc", &Outcome{Accel: "kvm"}, stale), Record, "KVM runs no stale text")
	assert.Assert(t, !p.SingleThread())
	assert.Equal(t, p.After("suites/qdisc", tcg, stale), Again)
	assert.Assert(t, !p.SingleThread(), "what the artefact killed runs again as before first")
	assert.Equal(t, p.After("", tcg, stale), Again, "the boot has its own retry")
	assert.Assert(t, !p.SingleThread())
	assert.Equal(t, p.After("suites/qdisc", tcg, stale), Again)
	assert.Assert(t, p.SingleThread(), "the second time, single-threaded")
	assert.Equal(t, p.After("suites/qdisc", tcg, stale), Untested, "a third time is untestable")
}
