package feature

import (
	"errors"
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
)

func TestUnsupportedMatches(t *testing.T) {
	err := fmt.Errorf("probe: %w", Unsupported(IFFBackpressure, "TUNGETFEATURES=%#x", 0x7173))
	assert.Assert(t, errors.Is(err, ErrNotSupported))
	assert.Error(t, err, "probe: kernel lacks IFF_BACKPRESSURE (TUNGETFEATURES=0x7173)")
}
