package devmap

import (
	"fmt"
	"maps"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// TestBroadcastCopies/ProgramRewritesItsCopy: broadcast copies are
// independent frames. Every destination's devmap program (xdp_devmap_mark)
// stamps its egress ifindex into its copy's payload; no program may see
// another's stamp, and every sink must receive its frames stamped by its
// own destination's program only. On the native path each copy but the
// last is an xdpf_clone (a new page); on the generic path
// dev_map_redirect_multi clones sk_buffs, whose data is shared until
// dev_map_generic_redirect copies it for the entry's program.
func TestBroadcastCopies(t *testing.T) {
	feature.Of(t, feature.Seed004)
	t.Run("ProgramRewritesItsCopy", func(t *testing.T) {
		eachDriver(t, true, func(t *testing.T, r *Rig, d Driver) {
			feature.Require(t, ProbeBroadcast(r))
			ctx := withDeadline(t)
			const frames = 8
			m := r.Map(t, false)
			entries := map[uint32]Entry{}
			for i, dst := range r.Dst {
				r.SetEntry(t, m, uint32(i), dst, r.Objs.XdpDevmapMark)
				entries[uint32(i)] = Entry{Dev: ifindex(dst), Prog: progMark}
			}
			sinks := r.Sink[:]
			tr := Traffic{Frames: frames, Batch: frames, Keys: []uint32{0}, Broadcast: true}
			r.SetConfig(t, func(c *bpfConfig) { c.Flags = unix.BPF_F_BROADCAST })
			r.Route(t, 0)

			assert.NilError(t, d.Push(ctx, frames, frames))
			l := settle(ctx, t, r, frames*uint64(len(sinks)))
			got := r.WaitRuns(ctx, t, uint32(frames*(1+len(sinks))))
			want := d.Path().Model()(tr, entries)
			if clonesMisplaced(t, d, r, l, sinks, entries[2].Dev, frames, got, want) {
				return
			}
			assert.Check(t, is.Equal(l.Foreign, uint64(0)), "%v", l)
			if d.Path() == Generic && sharedData(t, r, frames) {
				expectedFailure(t, feature.IssueGenericCloneShared, fmt.Sprintf("each destination's program found the previous destination's stamp in its copy, and all %d frames at every sink carry the last program's stamp (%v)", frames, l))
			}
			for i, s := range sinks {
				assert.Check(t, is.DeepEqual(marksAt(t, r, s, r.Dst[:]), map[string]uint64{r.Dst[i].Attrs().Name: frames}),
					"frames at %s by the program that stamped them; %v", s.Attrs().Name, l)
			}
			for _, run := range r.RawRuns(t) {
				if run.Kind == 'D' && run.Mark != 0 {
					t.Errorf("devmap program for frame %d on ifindex %d found ifindex %d's stamp in its copy", run.Frame, run.Dest, run.Mark)
				}
			}
			assert.Check(t, Equal(got, want), "run order: got %s, want %s; %s", Shape(got), Shape(want), FirstDifference(got, want))
		})
	})
}

// sharedData reports whether the generic path showed exactly what happens
// when the broadcast copies share one buffer: the program of destination i
// found destination i-1's stamp, and every sink got all frames with the
// last destination's stamp.
func sharedData(t *testing.T, r *Rig, frames uint64) bool {
	t.Helper()
	prev := map[uint32]uint32{} // destination → the stamp its program must find
	for i := 1; i < len(r.Dst); i++ {
		prev[ifindex(r.Dst[i])] = ifindex(r.Dst[i-1])
	}
	for _, run := range r.RawRuns(t) {
		if run.Kind == 'D' && run.Mark != prev[run.Dest] {
			return false
		}
	}
	last := r.Dst[len(r.Dst)-1]
	for _, s := range r.Sink {
		if !maps.Equal(marksAt(t, r, s, r.Dst[:]), map[string]uint64{last.Attrs().Name: frames}) {
			return false
		}
	}
	return true
}

// marksAt returns how many frames the sink on l received unstamped
// ("none") or stamped by the program of each device in devs.
func marksAt(t *testing.T, r *Rig, l netlink.Link, devs []netlink.Link) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	if n := r.Marked(t, l, 0); n > 0 {
		out["none"] = n
	}
	for _, dev := range devs {
		if n := r.Marked(t, l, ifindex(dev)); n > 0 {
			out[dev.Attrs().Name] = n
		}
	}
	return out
}
