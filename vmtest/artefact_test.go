package vmtest

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestArtefact(t *testing.T) {
	stale := []Splat{{Kind: "BUG", Lines: []string{
		"Oops: int3: 0000 [#1] PREEMPT SMP NOPTI",
		"RIP: 0010:sched_clock_cpu+0x9/0x1e0",
		"Code: 90 90 90 90 90 90 90 90 90 90 90 90 90 90 90 90 f3 0f 1e fa <e9> 12 00 00 00 55 48",
	}}}
	assert.Assert(t, Artefact(&Outcome{Accel: "tcg"}, stale))
	assert.Assert(t, Artefact(&Outcome{Accel: "tcg", Console: stale[0].Lines}, nil), "read on the console too")
	assert.Assert(t, !Artefact(&Outcome{Accel: "tcg"}, nil), "a crash without the artefact is the kernel's")
	assert.Assert(t, !Artefact(&Outcome{Accel: "kvm"}, stale), "KVM runs no stale text")
	assert.Assert(t, !Artefact(nil, stale), "no outcome, no boot to blame")
}
