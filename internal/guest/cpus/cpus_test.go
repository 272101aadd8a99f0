package cpus

import (
	"testing"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestPin(t *testing.T) {
	all, err := Allowed()
	assert.NilError(t, err)
	assert.Assert(t, len(all) > 0)
	done := make(chan []int)
	go func() {
		// Returns locked: the runtime ends the bound thread.
		assert.Check(t, Pin(all[len(all)-1]))
		got, err := Allowed()
		assert.Check(t, err)
		done <- got
	}()
	assert.Check(t, is.DeepEqual(<-done, all[len(all)-1:]), "the pinned thread may run on its CPU only")
	var set unix.CPUSet
	assert.NilError(t, unix.SchedGetaffinity(0, &set))
	assert.Check(t, is.Equal(set.Count(), len(all)), "this thread keeps its CPUs")
}
