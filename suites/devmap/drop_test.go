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
// flushed queue, sent=0 drops=16 — and by no device counter.
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
			// Before the seed the program ran at enqueue and its drops
			// never reached a flush: no ledger can balance then.
			if runs := r.Runs(t); Equal(runs, EnqueueTime(tr, entries)) {
				t.Fatalf("devmap program ran at enqueue time: its %d XDP_DROPs never reach xdp_devmap_xmit (%v; sinks received %d)", frames, r.Totals(t), r.ReceivedAll(t))
			}
			a, tot := settle(ctx, t, r, frames)

			want := wantFlushes(FlushTime(tr, entries), 0)
			got := r.Flushes(t)
			assert.Check(t, is.Equal(len(got), len(want)), "flushes: got %v, want %v; %v; %v", got, want, a, tot)
			for i := range min(len(got), len(want)) {
				g := fmt.Sprintf("to=%d sent=%d drops=%d", got[i].ToIfindex, got[i].Sent, got[i].Drops)
				assert.Check(t, is.Equal(g, want[i]), "flush %d; %v", i, a)
			}
			assert.Check(t, is.Equal(a.Received, uint64(0)), "%v; %v", a, tot)
			assert.Check(t, is.Equal(tot.Drops, uint64(frames)), "%v; %v", a, tot)
			after := []string{r.LinkStats(t, r.Dst[0]).String(), r.LinkStats(t, r.Sink[0]).String()}
			assert.Check(t, is.DeepEqual(after, before), "a0 and a0p stats64 must not see the dropped frames; %v; %v", a, tot)
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
