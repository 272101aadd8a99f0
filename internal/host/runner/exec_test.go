package runner

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/vmtest"
)

// TestPassSinkFailed: a "--- FAIL" line, even split over two chunks, marks
// the try failed, so that an emulator artefact after it is not retried.
func TestPassSinkFailed(t *testing.T) {
	var s passSink
	bin := vmtest.Binary{Name: "x.test"}
	s.Output(bin, []byte("=== RUN   TestA\n--- PASS: TestA (0.00s)\n--- FA"))
	assert.Assert(t, !s.failed, "a pass is not a failure, and half a line is no line")
	s.Output(bin, []byte("IL: TestB (0.01s)\n"))
	assert.Assert(t, s.failed)
}
