package devmap

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

// TestDevmapDrop/CountedAtFlush: frames the devmap program drops are not
// transmitted, and since the program runs inside bq_xmit_all every flush
// reports them to xdp:xdp_devmap_xmit as its drops (sent=0), and no device
// counter sees them. Before the seed the program ran at enqueue and its
// drops reached no bulk queue: no flush, no counter; a native driver that
// shows exactly that reports seed 004 absent. On the generic path the
// program frees each frame at once: no flush, no counter, on every kernel.
func TestDevmapDrop(t *testing.T) {
	observe.Of(t, feature.Seed004)
	t.Run("CountedAtFlush", func(t *testing.T) {
		eachDriver(t, testDropCountedAtFlush)
	})
}

func testDropCountedAtFlush(t *testing.T, r *rig, d driver) {
	ctx := withDeadline(t)
	const frames = 64
	m := r.devmap(t, false)
	r.setEntry(t, m, 0, r.dst[0], r.objs.XdpDevmapDrop)
	r.route(t, 0)
	entries := map[uint32]entry{0: {ifindex(r.dst[0]), progDrop}}
	tr := load{frames: frames, keys: []uint32{0}}
	before := []string{r.linkStats(t, r.dst[0]).String(), r.linkStats(t, r.sink[0]).String()}

	assert.NilError(t, d.push(ctx, frames, frames))
	s := judge(d, quietEvents(ctx, t, r, 2*frames), tr, entries, frames) // an M and a D run per frame
	dropped := dropRuns(r.rawRuns(t))
	var l ledger
	if d.when() == atOnce || s.enqueue {
		why := "XDP_DROP by the devmap program before any bulk queue: no counter sees them, the runs log does"
		l = settleUncounted(ctx, t, r, frames, dropped, why)
	} else {
		l = settle(ctx, t, r, frames)
	}
	assert.Check(t, is.Equal(l.Received, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(dropped, uint64(frames)), "devmap program runs that returned XDP_DROP; %v", l)
	after := []string{r.linkStats(t, r.dst[0]).String(), r.linkStats(t, r.sink[0]).String()}
	assert.Check(t, is.DeepEqual(after, before), "a0 and a0p stats64 must not see the dropped frames; %v", l)
	// Every frame of every flush was dropped by the devmap program.
	for i, f := range r.flushes(t) {
		assert.Check(t, f.Sent == 0 && f.Drops > 0,
			"xdp_devmap_xmit event %d to ifindex %d: sent=%d drops=%d, want sent=0 drops>0; %v",
			i, f.ToIfindex, f.Sent, f.Drops, l)
	}
	s.report(t, fmt.Sprintf(": its %d XDP_DROPs never reached a bulk queue or xdp_devmap_xmit (%v)", frames, l))
}

// quietEvents waits until the programs have logged runs runs and the logs
// stop growing (a flush is traced after its D runs), then reads the events.
func quietEvents(ctx context.Context, t *testing.T, r *rig, runs uint32) []event {
	t.Helper()
	r.waitEvents(ctx, t, runs)
	get := func() (bpfState, error) { return r.state(t), nil }
	if _, err := counters.WaitSteady(ctx, 5*time.Second, 100*time.Millisecond, get); err != nil {
		t.Fatalf("runs and flushes did not stop: %v", err)
	}
	return r.events(t)
}

// dropRuns counts the D runs whose program returned XDP_DROP.
func dropRuns(runs []bpfRun) uint64 {
	var n uint64
	for _, r := range runs {
		if r.Kind == 'D' && r.Verdict == xdpDrop {
			n++
		}
	}
	return n
}
