package devmap

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
)

// TestDevmapDrop/CountedAtFlush: frames the devmap program drops are not
// transmitted, and since the program runs inside bq_xmit_all they are
// reported by xdp:xdp_devmap_xmit as drops of their flush — one event per
// flushed queue, sent=0 drops=16 — and by no device counter. Before the
// seed the program ran at enqueue and its drops reached no bulk queue: no
// event, no counter; a native driver that shows exactly that reports seed
// 004 absent. On the generic path the program frees each frame at once
// (kfree_skb): no event, no counter, on every kernel.
func TestDevmapDrop(t *testing.T) {
	feature.Of(t, feature.Seed004)
	t.Run("CountedAtFlush", func(t *testing.T) {
		eachDriver(t, true, func(t *testing.T, r *Rig, d Driver) {
			ctx := withDeadline(t)
			const frames = 64
			m := r.Map(t, false)
			r.SetEntry(t, m, 0, r.Dst[0], r.Objs.XdpDevmapDrop)
			r.Route(t, 0)
			entries := map[uint32]Entry{0: {Dev: ifindex(r.Dst[0]), Prog: progDrop}}
			tr := Traffic{Frames: frames, Batch: frames, Keys: []uint32{0}}
			before := []string{r.LinkStats(t, r.Dst[0]).String(), r.LinkStats(t, r.Sink[0]).String()}

			assert.NilError(t, d.Push(ctx, frames, frames))
			runs := r.WaitRuns(ctx, t, 2*frames) // an M and a D run per frame
			dropped := dropRuns(r.RawRuns(t))
			enqueueTime := Equal(runs, EnqueueTime(tr, entries))
			var l Ledger
			if d.Path() == Generic || enqueueTime {
				l = settleUncounted(ctx, t, r, frames, dropped, "XDP_DROP by the devmap program before any bulk queue: no counter sees them, the runs log does")
			} else {
				l = settle(ctx, t, r, frames)
			}
			assert.Check(t, is.Equal(l.Received, uint64(0)), "%v", l)
			assert.Check(t, is.Equal(dropped, uint64(frames)), "devmap program runs that returned XDP_DROP; %v", l)
			after := []string{r.LinkStats(t, r.Dst[0]).String(), r.LinkStats(t, r.Sink[0]).String()}
			assert.Check(t, is.DeepEqual(after, before), "a0 and a0p stats64 must not see the dropped frames; %v", l)
			var got, want []string
			for _, f := range r.Flushes(t) {
				got = append(got, fmt.Sprintf("to=%d sent=%d drops=%d", f.ToIfindex, f.Sent, f.Drops))
			}
			if d.Path() == Native && !enqueueTime {
				want = wantFlushes(FlushTime(tr, entries), 0)
			}
			assert.Check(t, is.DeepEqual(got, want), "xdp_devmap_xmit events; %v", l)

			model := d.Path().Model()(tr, entries)
			if d.Path() == Native && enqueueTime {
				before004(t, fmt.Sprintf("devmap program ran at enqueue time (runs alternate M D): its %d XDP_DROPs never reached a bulk queue or xdp_devmap_xmit (%v)", frames, l))
			}
			assert.Check(t, Equal(runs, model), "run order: got %s, want %s; %s", Shape(runs), Shape(model), FirstDifference(runs, model))
		})
	})
}

// wantFlushes turns a model sequence into the xdp_devmap_xmit events it
// implies: every group of consecutive D runs on one device is one flush, of
// which sentPerFrame (0 or 1) frames each are sent and the rest dropped.
func wantFlushes(runs []Run, sentPerFrame int) []string {
	var out []string
	for i := 0; i < len(runs); {
		if runs[i].Kind != 'D' {
			i++
			continue
		}
		j := i
		for j < len(runs) && runs[j].Kind == 'D' && runs[j].Dev == runs[i].Dev {
			j++
		}
		n := j - i
		out = append(out, fmt.Sprintf("to=%d sent=%d drops=%d", runs[i].Dev, n*sentPerFrame, n*(1-sentPerFrame)))
		i = j
	}
	return out
}
