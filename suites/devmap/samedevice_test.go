package devmap

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// TestSameDevice/TwoEntriesTwoPrograms: two devmap entries point at one
// device, each with its own program; frames alternate between them. The
// seed's semantics (programs per destination entry) want every frame to run
// its own entry's program. Kernels with the seed run the first-enqueued
// entry's program for the whole bulk: a known issue (see KnownIssues).
func TestSameDevice(t *testing.T) {
	feature.Of(t, feature.Seed004)
	t.Run("TwoEntriesTwoPrograms", func(t *testing.T) {
		eachDriver(t, true, func(t *testing.T, r *Rig, d Driver) {
			ctx := withDeadline(t)
			const frames = 8
			m := r.Map(t, false)
			r.SetEntry(t, m, 0, r.Dst[0], r.Objs.XdpDevmapA)
			r.SetEntry(t, m, 1, r.Dst[0], r.Objs.XdpDevmapB)
			entries := map[uint32]Entry{0: {Dev: ifindex(r.Dst[0]), Prog: progA}, 1: {Dev: ifindex(r.Dst[0]), Prog: progB}}
			keys := []uint32{0, 1}
			r.Route(t, keys...)
			tr := Traffic{Frames: frames, Batch: frames, Keys: keys}

			assert.NilError(t, d.Push(ctx, frames, frames))
			a, tot := settle(ctx, t, r, frames)
			assert.Check(t, is.Equal(r.Received(t, r.Sink[0]), uint64(frames)), "%v; %v", a, tot)

			got := onlyD(r.Runs(t))
			var wrong []string
			for _, run := range got {
				if want := entries[keys[int(run.Frame)%len(keys)]].Prog; run.Prog != want {
					wrong = append(wrong, fmt.Sprintf("frame %d ran %s, its entry has %s", run.Frame, progName(run.Prog), progName(want)))
				}
			}
			assert.Assert(t, is.Len(got, frames), "devmap program runs: %v", got)
			if len(wrong) == 0 {
				return
			}
			observed := fmt.Sprintf("%d of %d frames ran another entry's program (%s, …)", len(wrong), frames, wrong[0])
			if Equal(got, onlyD(FlushTime(tr, entries))) {
				expectedFailure(t, feature.IssueDevmapSameDevice, observed)
			}
			t.Fatalf("%s; runs %v", observed, got)
		})
	})
}
