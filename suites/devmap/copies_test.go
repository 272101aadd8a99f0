package devmap

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// broadcast is what a broadcast test pushed and read back.
type broadcast struct {
	r       *rig
	d       driver
	frames  int
	tr      load
	entries map[uint32]entry
	// sinks[i] receives the copies to entry i; the last entry gets the
	// original frame, the others clones.
	sinks []netlink.Link
	l     ledger
	seq   sequence
}

// read settles the ledger over every copy and judges the events.
func (c *broadcast) read(ctx context.Context, t *testing.T) {
	t.Helper()
	c.l = settle(ctx, t, c.r, uint64(c.frames*len(c.sinks)))
	got := c.r.waitEvents(ctx, t, uint32(c.frames*(1+len(c.sinks))))
	c.seq = judge(c.d, got, c.tr, c.entries, c.frames)
}

// TestBroadcastCopies/ProgramRewritesItsCopy: broadcast copies are
// independent frames. Every destination's devmap program (xdp_devmap_mark)
// stamps its egress ifindex into its copy's payload; no program may see
// another's stamp, and every sink must receive its frames stamped by its
// own destination's program only. On the native path each copy but the
// last is an xdpf_clone (a new page); on the generic path
// dev_map_redirect_multi clones sk_buffs, whose data is shared until
// dev_map_generic_redirect copies it for the entry's program.
func TestBroadcastCopies(t *testing.T) {
	observe.Of(t, feature.Seed004)
	t.Run("ProgramRewritesItsCopy", func(t *testing.T) {
		eachDriver(t, testProgramRewritesItsCopy)
	})
}

func testProgramRewritesItsCopy(t *testing.T, r *rig, d driver) {
	observe.Probe(t, feature.BPFBroadcast, probeBroadcast(r))
	ctx := withDeadline(t)
	const frames = 8
	m := r.devmap(t, false)
	c := broadcast{r: r, d: d, frames: frames, entries: map[uint32]entry{}, sinks: r.sink[:],
		tr: load{frames: frames, keys: []uint32{0}, broadcast: true}}
	for i, dst := range r.dst {
		r.setEntry(t, m, uint32(i), dst, r.objs.XdpDevmapMark)
		c.entries[uint32(i)] = entry{ifindex(dst), progMark}
	}
	r.setConfig(t, func(cfg *bpfConfig) { cfg.Flags = unix.BPF_F_BROADCAST })
	r.route(t, 0)

	assert.NilError(t, d.push(ctx, frames, frames))
	c.read(ctx, t)
	if c.clonesMisplaced(t) {
		return
	}
	assert.Check(t, is.Equal(c.l.foreign, uint64(0)), "%v", c.l)
	if d.when() == atOnce && sharedData(t, r, frames) {
		observed := fmt.Sprintf("each destination's program found the previous one's stamp in its copy, "+
			"and all %d frames at every sink carry the last program's stamp (%v)", frames, c.l)
		expectedFailure(t, feature.IssueGenericCloneShared, observed)
	}
	for i, s := range c.sinks {
		assert.Check(t, is.DeepEqual(marksAt(t, r, s, r.dst[:]), map[string]uint64{r.dst[i].Attrs().Name: frames}),
			"frames at %s by the program that stamped them; %v", s.Attrs().Name, c.l)
	}
	for _, run := range r.rawRuns(t) {
		if run.Kind == 'D' && run.Mark != 0 {
			t.Errorf("devmap program for frame %d on ifindex %d found ifindex %d's stamp in its copy",
				run.Frame, run.Dest, run.Mark)
		}
	}
	c.seq.report(t, "")
}

// sharedData reports whether the generic path showed exactly what happens
// when the broadcast copies share one buffer: the program of destination i
// found destination i-1's stamp, and every sink got all frames with the
// last destination's stamp.
func sharedData(t *testing.T, r *rig, frames uint64) bool {
	t.Helper()
	prev := map[uint32]uint32{} // destination → the stamp its program must find
	for i := 1; i < len(r.dst); i++ {
		prev[ifindex(r.dst[i])] = ifindex(r.dst[i-1])
	}
	for _, run := range r.rawRuns(t) {
		if run.Kind == 'D' && run.Mark != prev[run.Dest] {
			return false
		}
	}
	last := r.dst[len(r.dst)-1]
	for _, s := range r.sink {
		if !maps.Equal(marksAt(t, r, s, r.dst[:]), map[string]uint64{last.Attrs().Name: frames}) {
			return false
		}
	}
	return true
}

// marksAt returns how many frames the sink on l received unstamped
// ("none") or stamped by the program of each device in devs.
func marksAt(t *testing.T, r *rig, l netlink.Link, devs []netlink.Link) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	if n := r.marked(t, l, 0); n > 0 {
		out["none"] = n
	}
	for _, dev := range devs {
		if n := r.marked(t, l, ifindex(dev)); n > 0 {
			out[dev.Attrs().Name] = n
		}
	}
	return out
}
