package devmap

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

const xdpRedirect = 4 // enum xdp_action XDP_REDIRECT

// noMeta is what the programs log when a frame carries no metadata.
const noMeta = ^uint32(0)

// TestDevmapProgram/EgressAndMetadata: the devmap program runs exactly once
// for every frame, after the main program's run for it, and sees the right
// egress_ifindex, the ingress device, and the 4 bytes of metadata the main
// program wrote with bpf_xdp_adjust_meta — which at flush time have
// travelled inside the xdp_frame through the bulk queue. Before the seed
// the devmap program ran at enqueue and saw no metadata (dev_map_run_prog
// invalidated it): a native driver that shows exactly that, after the
// ledger balances, reports seed 004 absent. The generic path never hands
// the devmap program metadata. Frames are identified by the number the
// main program writes into their payload.
func TestDevmapProgram(t *testing.T) {
	feature.Of(t, feature.Seed004)
	t.Run("EgressAndMetadata", func(t *testing.T) {
		for _, hash := range []bool{false, true} {
			name := "Devmap"
			if hash {
				name = "DevmapHash"
			}
			t.Run(name, func(t *testing.T) {
				eachDriver(t, true, func(t *testing.T, r *Rig, d Driver) {
					testEgressAndMetadata(t, r, d, hash)
				})
			})
		}
	})
}

func testEgressAndMetadata(t *testing.T, r *Rig, d Driver, hash bool) {
	ctx := withDeadline(t)
	const frames = 32
	m := r.Map(t, hash)
	r.SetEntry(t, m, 0, r.Dst[0], r.Objs.XdpDevmapA)
	r.SetEntry(t, m, 1, r.Dst[1], r.Objs.XdpDevmapB)
	entries := map[uint32]Entry{0: {Dev: ifindex(r.Dst[0]), Prog: progA}, 1: {Dev: ifindex(r.Dst[1]), Prog: progB}}
	keys := []uint32{0, 1, 1, 0}
	r.Route(t, keys...)
	tr := Traffic{Frames: frames, Batch: frames, Keys: keys}
	assert.NilError(t, d.Push(ctx, frames, frames))

	// Every frame is accounted for first.
	l := settle(ctx, t, r, frames)
	assert.Check(t, is.Equal(l.DeviceDrops, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(l.Foreign, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(r.Received(t, r.Sink[0]), uint64(frames/2)), "a0p; %v", l)
	assert.Check(t, is.Equal(r.Received(t, r.Sink[1]), uint64(frames/2)), "b0p; %v", l)

	in := ifindex(r.In)
	mAt := map[uint32]int{}  // frame → index of its M run
	dFor := map[uint32]int{} // frame → D runs seen
	var metaSeen, metaNone int
	for i, run := range r.RawRuns(t) {
		where := fmt.Sprintf("run %d (%c frame %d)", i, run.Kind, run.Frame)
		assert.Check(t, is.Equal(run.Ingress, in), "%s: ingress_ifindex", where)
		switch run.Kind {
		case 'M':
			mAt[run.Frame] = i
			assert.Check(t, is.Equal(run.Verdict, uint32(xdpRedirect)), "%s: bpf_redirect_map verdict", where)
		case 'D':
			at, ok := mAt[run.Frame]
			if !assert.Check(t, ok, "%s: payload holds no frame number the main program gave before", where) {
				continue
			}
			dFor[run.Frame]++
			switch run.Meta {
			case run.Frame:
				metaSeen++
			case noMeta:
				metaNone++
			default:
				t.Errorf("%s: metadata holds %d, neither the frame's number nor none", where, run.Meta)
			}
			want := entries[keys[int(run.Frame)%len(keys)]]
			assert.Check(t, is.Equal(run.Dest, want.Dev), "%s (M at run %d): egress_ifindex", where, at)
			assert.Check(t, is.Equal(run.Prog, want.Prog), "%s: program of the entry", where)
		default:
			t.Errorf("%s: unknown kind", where)
		}
	}
	assert.Check(t, is.Len(mAt, frames), "frames the main program ran for")
	for f := range uint32(frames) {
		assert.Check(t, is.Equal(dFor[f], 1), "devmap program runs for frame %d", f)
	}

	// Metadata last: on the native path it travels in the xdp_frame to the
	// flush since seed 004.
	switch {
	case d.Path() == Generic:
		assert.Check(t, is.Equal(metaNone, frames), "devmap program runs on the generic path that saw no metadata (bpf_prog_run_generic_xdp starts them with data_meta == data)")
	case metaSeen == frames:
	case metaNone == frames && Equal(r.Runs(t), EnqueueTime(tr, entries)):
		before004(t, fmt.Sprintf("devmap program ran at enqueue time (runs alternate M D) and none of its %d runs saw the metadata the main program wrote (dev_map_run_prog invalidated it)", frames))
	default:
		t.Errorf("devmap program runs that saw the main program's metadata: %d of %d (%d saw none)", metaSeen, frames, metaNone)
	}
}
