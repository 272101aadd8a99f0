package feature

import (
	"errors"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
)

func TestUnsupportedMatches(t *testing.T) {
	err := fmt.Errorf("probe: %w", Unsupported("IFF_BACKPRESSURE", "TUNGETFEATURES=%#x", 0x7173))
	assert.Assert(t, errors.Is(err, ErrNotSupported))
	assert.Error(t, err, "probe: kernel lacks IFF_BACKPRESSURE (TUNGETFEATURES=0x7173)")
}

func TestExpected(t *testing.T) {
	t.Setenv(KernelEnv, "debian:7.3")
	assert.Assert(t, Expected("IFF_BACKPRESSURE"))
	t.Setenv(KernelEnv, "debian:7.2")
	assert.Assert(t, !Expected("IFF_BACKPRESSURE"))
	t.Setenv(KernelEnv, "")
	assert.Assert(t, !Expected("vhost-net"))
}
