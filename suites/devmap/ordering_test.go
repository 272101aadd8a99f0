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
// driver's path: FlushTime on the native path (see its comment for the
// derivation from devmap.c), EnqueueTime on the generic path, which has no
// bulk queue on any kernel. After the ledger balances, a native driver that
// shows exactly EnqueueTime reports seed 004 absent ("devmap program ran at
// enqueue time"); any other order fails.
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
					l := settle(ctx, t, r, uint64(tc.frames))
					assert.Check(t, is.Equal(l.Received-l.Foreign, uint64(tc.frames)), "%v", l)
					want := d.Path().Model()(tr, entries)
					// The bulk queues flush alike before and after the
					// seed; their sizes prove the driver really batched.
					// The generic path has no bulk queue: no flush at all.
					var flushes, wantF []string
					for _, f := range r.Flushes(t) {
						flushes = append(flushes, fmt.Sprintf("to=%d sent=%d drops=%d", f.ToIfindex, f.Sent, f.Drops))
					}
					if d.Path() == Native {
						wantF = wantFlushes(want, 1)
					}
					assert.Check(t, is.DeepEqual(flushes, wantF), "xdp_devmap_xmit events: the driver did not batch as asked; %v", l)

					got := r.Runs(t)
					if Equal(got, want) {
						// Only where flushing differs from enqueueing
						// does the order tell the seed.
						if d.Path() == Native && !Equal(want, EnqueueTime(tr, entries)) {
							feature.Shows(t, feature.Seed004, fmt.Sprintf("the devmap programs ran at flush: %s", Shape(got)))
						}
						return
					}
					if d.Path() == Native && Equal(got, EnqueueTime(tr, entries)) {
						before004(t, fmt.Sprintf("devmap program ran at enqueue time: all %d runs alternate M D, each frame's D right after its M; want (at flush) %s", len(got), Shape(want)))
					}
					t.Fatalf("run order: got %s, want %s; %s\ngot  %v\nwant %v", Shape(got), Shape(want), FirstDifference(got, want), got, want)
				})
			}
		})
	}
}
