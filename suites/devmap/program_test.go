package devmap

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

const xdpRedirect = 4 // enum xdp_action XDP_REDIRECT

// noMeta is what the programs log when a frame carries no metadata.
const noMeta = ^uint32(0)

// TestDevmapProgram/EgressAndMetadata: the devmap program runs exactly once
// for every frame, after the main program's run for it, and sees the right
// egress_ifindex, the ingress device, and the 4 bytes of metadata the main
// program wrote with bpf_xdp_adjust_meta, which at flush time have
// travelled inside the xdp_frame through the bulk queue. Before the seed
// the devmap program ran at enqueue and saw no metadata (dev_map_run_prog
// invalidated it): a native driver that shows exactly that reports seed
// 004 absent. The generic path never hands the devmap program metadata.
func TestDevmapProgram(t *testing.T) {
	observe.Of(t, feature.Seed004)
	t.Run("EgressAndMetadata", func(t *testing.T) {
		for _, hash := range []bool{false, true} {
			name := "Devmap"
			if hash {
				name = "DevmapHash"
			}
			t.Run(name, func(t *testing.T) {
				eachDriver(t, func(t *testing.T, r *rig, d driver) {
					testEgressAndMetadata(t, r, d, hash)
				})
			})
		}
	})
}

func testEgressAndMetadata(t *testing.T, r *rig, d driver, hash bool) {
	ctx := withDeadline(t)
	const frames = 32
	m := r.devmap(t, hash)
	r.setEntry(t, m, 0, r.dst[0], r.objs.XdpDevmapA)
	r.setEntry(t, m, 1, r.dst[1], r.objs.XdpDevmapB)
	entries := map[uint32]entry{0: {ifindex(r.dst[0]), progA}, 1: {ifindex(r.dst[1]), progB}}
	tr := load{frames: frames, keys: []uint32{0, 1, 1, 0}}
	r.route(t, tr.keys...)
	assert.NilError(t, d.push(ctx, frames, frames))

	// Every frame is accounted for first.
	l := settle(ctx, t, r, frames)
	assert.Check(t, is.Equal(l.DeviceDrops, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(l.foreign, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(r.received(t, r.sink[0]), uint64(frames/2)), "a0p; %v", l)
	assert.Check(t, is.Equal(r.received(t, r.sink[1]), uint64(frames/2)), "b0p; %v", l)
	meta := checkRuns(t, r.rawRuns(t), ifindex(r.in), tr, entries)

	// Metadata last: on the native path it travels in the xdp_frame to the
	// flush since seed 004.
	_, notEnqueue := explain(r.events(t), tr, entries, atEnqueue)
	switch {
	case d.when() == atOnce:
		// bpf_prog_run_generic_xdp starts them with data_meta == data.
		assert.Check(t, is.Equal(meta.none, frames), "devmap program runs on the generic path that saw no metadata")
	case meta.seen == frames:
	case meta.none == frames && d.when() == atFlush && notEnqueue == nil:
		// dev_map_run_prog invalidated the metadata.
		before004(t, fmt.Sprintf("devmap program ran at enqueue time (each frame's D run right after its M run) "+
			"and none of its %d runs saw the metadata the main program wrote", frames))
	default:
		t.Errorf("devmap program runs that saw the main program's metadata: %d of %d (%d saw none)",
			meta.seen, frames, meta.none)
	}
}

// metaCount is how many D runs saw the main program's metadata, and how
// many saw none.
type metaCount struct{ seen, none int }

// checkRuns checks every logged run: the ingress device, M's verdict, and
// for each frame one D run, after its M run, on its entry's device with its
// entry's program; it counts the D runs' metadata.
func checkRuns(t *testing.T, runs []bpfRun, in uint32, tr load, entries map[uint32]entry) metaCount {
	t.Helper()
	var c metaCount
	mAt := map[uint32]int{}  // frame → index of its M run
	dFor := map[uint32]int{} // frame → D runs seen
	for i, run := range runs {
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
				c.seen++
			case noMeta:
				c.none++
			default:
				t.Errorf("%s: metadata holds %d, neither the frame's number nor none", where, run.Meta)
			}
			want := entries[tr.key(int(run.Frame))]
			assert.Check(t, is.Equal(run.Dest, want.dev), "%s (M at run %d): egress_ifindex", where, at)
			assert.Check(t, is.Equal(run.Prog, want.prog), "%s: program of the entry", where)
		default:
			t.Errorf("%s: unknown kind", where)
		}
	}
	assert.Check(t, is.Len(mAt, tr.frames), "frames the main program ran for")
	for f := range uint32(tr.frames) {
		assert.Check(t, is.Equal(dFor[f], 1), "devmap program runs for frame %d", f)
	}
	return c
}
