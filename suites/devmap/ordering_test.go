package devmap

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// TestOrdering checks seed 004's central claim: the devmap program runs when
// a bulk queue is flushed, over the frames of one destination in sequence,
// not when each frame is enqueued. The expected sequence is exact, from the
// FlushTime model (see its comment for the derivation from devmap.c); a
// kernel that matches EnqueueTime instead fails with "devmap program ran at
// enqueue time".
func TestOrdering(t *testing.T) {
	feature.Of(t, feature.Seed004)
	cases := []struct {
		name          string
		frames, batch int
		keys          []uint32
		hash          bool
	}{
		// One destination: D runs come in bulks of 16, each after the M
		// run that found its queue full, and the rest at the flush.
		{"OneDest/Batch64", 64, 64, []uint32{0}, false},
		{"OneDest/Batch16", 32, 16, []uint32{0}, false},
		// Batch 1 flushes after every frame: M D M D on any kernel, the
		// control that the drivers really batch in the other cases.
		{"OneDest/Batch1", 8, 1, []uint32{0}, false},
		// Two destinations interleaved: D runs grouped per device.
		{"ABAB/Batch4", 8, 4, []uint32{0, 1}, false},
		{"ABAB/Batch40", 40, 40, []uint32{0, 1}, false},
		{"AABB/Hash/Batch48", 48, 48, []uint32{0, 0, 1, 1}, true},
	}
	for _, dv := range Drivers {
		t.Run(dv.Name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					ctx := withDeadline(t)
					r := NewRig(t, true)
					d := dv.New(t, r)
					m := r.Map(t, tc.hash)
					r.SetEntry(t, m, 0, r.Dst[0], r.Objs.XdpDevmapA)
					r.SetEntry(t, m, 1, r.Dst[1], r.Objs.XdpDevmapB)
					entries := map[uint32]Entry{
						0: {Dev: ifindex(r.Dst[0]), Prog: progA},
						1: {Dev: ifindex(r.Dst[1]), Prog: progB},
					}
					r.Route(t, tc.keys...)
					tr := Traffic{Frames: tc.frames, Batch: tc.batch, Keys: tc.keys}

					assert.NilError(t, d.Push(ctx, tc.frames, tc.batch))
					a, tot := settle(ctx, t, r, uint64(tc.frames))
					assert.Check(t, is.Equal(a.Received, uint64(tc.frames)), "%v; %v", a, tot)
					want := FlushTime(tr, entries)
					// The bulk queues flush alike before and after the
					// seed; their sizes prove the driver really batched.
					var flushes []string
					for _, f := range r.Flushes(t) {
						flushes = append(flushes, fmt.Sprintf("to=%d sent=%d drops=%d", f.ToIfindex, f.Sent, f.Drops))
					}
					assert.Check(t, is.DeepEqual(flushes, wantFlushes(want, 1)), "xdp_devmap_xmit events: the driver did not batch as asked; %v; %v", a, tot)

					got := r.Runs(t)
					if !Equal(got, want) {
						if Equal(got, EnqueueTime(tr, entries)) {
							t.Fatalf("devmap program ran at enqueue time: got %s, want (at flush) %s", Shape(got), Shape(want))
						}
						t.Fatalf("run order: got %s, want %s; %s\ngot  %v\nwant %v", Shape(got), Shape(want), FirstDifference(got, want), got, want)
					}
				})
			}
		})
	}
}
