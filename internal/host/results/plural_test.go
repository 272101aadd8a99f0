package results

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 test binaries", 1: "1 test binary", 2: "2 test binaries"} {
		assert.Equal(t, Count(n, "test binary"), want)
	}
	assert.Equal(t, Count(1, "kernel"), "1 kernel")
	assert.Equal(t, Count(4, "kernel"), "4 kernels")
	assert.Equal(t, Count(2, "key"), "2 keys")
	assert.Equal(t, Count(2, "VM"), "2 VMs")
}
