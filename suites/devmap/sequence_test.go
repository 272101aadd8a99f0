package devmap

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// TestModel checks the two models against the patterns measured and
// documented in ../shared/kernels.md, so the exact expectations the kernel
// tests use are themselves pinned.
func TestModel(t *testing.T) {
	feature.Of(t, feature.Seed004)
	one := map[uint32]Entry{0: {Dev: 10, Prog: progA}}
	for _, tc := range []struct {
		name  string
		tr    Traffic
		model func(Traffic, map[uint32]Entry) []Run
		want  string
	}{
		{"FlushTime/Batch64", Traffic{Frames: 64, Batch: 64, Keys: []uint32{0}}, FlushTime, "M×17 D×16 M×16 D×16 M×16 D×16 M×15 D×16"},
		{"FlushTime/Batch1", Traffic{Frames: 3, Batch: 1, Keys: []uint32{0}}, FlushTime, "M×1 D×1 M×1 D×1 M×1 D×1"},
		{"EnqueueTime/Batch64", Traffic{Frames: 3, Batch: 64, Keys: []uint32{0}}, EnqueueTime, "M×1 D×1 M×1 D×1 M×1 D×1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Check(t, is.Equal(Shape(tc.model(tc.tr, one)), tc.want))
		})
	}

	// Frames to A, B, A, B in one batch: grouped per device, the queue
	// that got its first frame last (B) at the head of the flush list.
	two := map[uint32]Entry{0: {Dev: 10, Prog: progA}, 1: {Dev: 20, Prog: progB}}
	got := FlushTime(Traffic{Frames: 4, Batch: 4, Keys: []uint32{0, 1}}, two)
	want := []Run{
		{'M', 0, 0, 0}, {'M', 1, 1, 0}, {'M', 2, 0, 0}, {'M', 3, 1, 0},
		{'D', 1, 20, progB}, {'D', 3, 20, progB}, {'D', 0, 10, progA}, {'D', 2, 10, progA},
	}
	assert.Check(t, Equal(got, want), "%v", FirstDifference(got, want))

	// Two entries on one device share its bulk queue: the program latched by
	// the first frame runs for all (the behaviour measured on 6.18).
	same := map[uint32]Entry{0: {Dev: 10, Prog: progA}, 1: {Dev: 10, Prog: progB}}
	for _, r := range FlushTime(Traffic{Frames: 4, Batch: 4, Keys: []uint32{0, 1}}, same) {
		if r.Kind == 'D' {
			assert.Check(t, is.Equal(r.Prog, uint32(progA)), "%v", r)
		}
	}
}
