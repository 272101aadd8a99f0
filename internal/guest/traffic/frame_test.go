package traffic

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestFrameRoundTrip(t *testing.T) {
	f := Frame([6]byte{2, 0, 0, 0, 0, 1}, 7, 1<<40+3)
	assert.Equal(t, len(f), FrameLen)
	stream, seq, err := Parse(f)
	assert.NilError(t, err)
	assert.Equal(t, stream, uint32(7))
	assert.Equal(t, seq, uint64(1<<40+3))

	f[14] ^= 1
	_, _, err = Parse(f)
	assert.ErrorIs(t, err, ErrNotOurs)
}
