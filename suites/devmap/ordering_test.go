package devmap

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// orderingCase pushes frames in bursts of batch, frame n to keys[n % len].
type orderingCase struct {
	name          string
	frames, batch int
	keys          []uint32
	hash          bool
}

// TestOrdering checks seed 004's central claim: the devmap program runs when
// a bulk queue is flushed, over the frames of one destination in sequence,
// not when each frame is enqueued. Whatever polls the kernel cut the frames
// into, the logged runs and flushes must be exactly what kernel/bpf/devmap.c
// makes of those polls (model_test.go); exactly the enqueue-time sequence
// reports seed 004 absent; anything else fails.
func TestOrdering(t *testing.T) {
	observe.Of(t, feature.Seed004)
	cases := []orderingCase{
		// One destination: D runs come in bulks of at most 16.
		{"OneDest/Batch64", 64, 64, []uint32{0}, false},
		{"OneDest/Batch16", 32, 16, []uint32{0}, false},
		// Batch 1 flushes after every frame: M D M D on any kernel.
		{"OneDest/Batch1", 8, 1, []uint32{0}, false},
		// Two destinations interleaved: D runs grouped per device.
		{"ABAB/Batch4", 8, 4, []uint32{0, 1}, false},
		{"ABAB/Batch40", 40, 40, []uint32{0, 1}, false},
		{"AABB/Hash/Batch48", 48, 48, []uint32{0, 0, 1, 1}, true},
	}
	for _, dv := range drivers {
		t.Run(dv.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					r, d := rigFor(t, dv)
					testOrdering(t, r, d, tc)
				})
			}
		})
	}
}

func testOrdering(t *testing.T, r *rig, d driver, tc orderingCase) {
	ctx := withDeadline(t)
	m := r.devmap(t, tc.hash)
	r.setEntry(t, m, 0, r.dst[0], r.objs.XdpDevmapA)
	r.setEntry(t, m, 1, r.dst[1], r.objs.XdpDevmapB)
	entries := map[uint32]entry{0: {ifindex(r.dst[0]), progA}, 1: {ifindex(r.dst[1]), progB}}
	r.route(t, tc.keys...)
	tr := load{frames: tc.frames, keys: tc.keys}

	assert.NilError(t, d.push(ctx, tc.frames, tc.batch))
	l := settle(ctx, t, r, uint64(tc.frames))
	assert.Check(t, is.Equal(l.Received-l.foreign, uint64(tc.frames)), "%v", l)
	judge(d, r.events(t), tr, entries, tc.batch).report(t, "")
}
