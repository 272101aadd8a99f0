package devmap

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/kmsg"
)

// TestLifecycle/ChangeEntriesWhileFlowing: while batches of 64 frames flow
// (alternating keys 0 and 1), the test replaces entry 0's program, deletes
// entry 1 and re-adds it pointing at another device. Seed 004 keeps an
// entry's program referenced until the bulk queue flushes, so:
//   - after a delete returns, no frame numbered from then on reaches the
//     deleted entry's device (M looks the entry up after numbering);
//   - after a program is replaced, the old one runs at most for the rest of
//     the batch in flight (the queue latched it), never after;
//   - the kernel logs no splat and gains no splat taint (internal/kmsg).
func TestLifecycle(t *testing.T) {
	feature.Of(t, feature.Seed004)
	for _, hash := range []bool{false, true} {
		name := "ChangeEntriesWhileFlowing"
		if hash {
			name += "/Hash"
		}
		t.Run(name, func(t *testing.T) {
			eachDriver(t, true, func(t *testing.T, r *Rig, d Driver) {
				testLifecycle(t, r, d, hash)
			})
		})
	}
}

const (
	batch    = 64
	xdpDrop  = 1 // enum xdp_action XDP_DROP: bpf_redirect_map's fallback for a missing key
	progress = 256
)

func testLifecycle(t *testing.T, r *Rig, d Driver, hash bool) {
	ctx := withDeadline(t)
	kmsg.Watch(t)
	m := r.Map(t, hash)
	a0, b0, c0 := r.Dst[0], r.Dst[1], r.Dst[2]
	r.SetEntry(t, m, 0, a0, r.Objs.XdpDevmapA)
	r.SetEntry(t, m, 1, b0, r.Objs.XdpDevmapA)
	r.SetConfig(t, func(c *bpfConfig) { c.Flags = xdpDrop })
	r.Route(t, 0, 1)

	flowCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		for flowCtx.Err() == nil {
			if err := d.Push(flowCtx, 64*batch, batch); err != nil && flowCtx.Err() == nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	frames := func() (uint32, error) { return r.State(t).Frames, nil }
	// advance waits until the traffic has numbered progress more frames.
	advance := func(what string) uint32 {
		t.Helper()
		now, _ := frames()
		if _, err := counters.WaitFor(ctx, 20*time.Second, frames, func(n uint32) bool { return n >= now+progress }); err != nil {
			stop()
			t.Fatalf("traffic stalled %s: %v (driver: %v)", what, err, <-done)
		}
		return now
	}

	advance("before the first change")
	r.SetEntry(t, m, 0, a0, r.Objs.XdpDevmapB)
	replaced, _ := frames()
	advance("after replacing entry 0's program")
	if err := r.Env.Do(func() error { return m.Delete(uint32(1)) }); err != nil {
		t.Fatalf("delete devmap entry 1: %v", err)
	}
	deleted, _ := frames()
	advance("after deleting entry 1")
	r.SetEntry(t, m, 1, c0, r.Objs.XdpDevmapA)
	readded, _ := frames()
	advance("after re-adding entry 1")
	stop()
	assert.NilError(t, <-done)
	// Frames the driver sent last may still be in NAPI on the peer: read
	// the program runs once nothing moves any more, or the last batch is
	// received without being counted as passed.
	moved := func() (uint64, error) { n, _ := frames(); return uint64(n) + r.ReceivedAll(t), nil }
	if _, err := counters.WaitSteady(ctx, 20*time.Second, 100*time.Millisecond, moved); err != nil {
		t.Fatalf("traffic did not stop after the driver did: %v", err)
	}

	oldA, newB := r.Seen(t, a0, progA), r.Seen(t, a0, progB)
	onB, onC := r.Seen(t, b0, progA), r.Seen(t, c0, progA)
	t.Logf("frames numbered: program replaced at %d, entry 1 deleted at %d, re-added at %d; a0: A %+v B %+v; b0 %+v; c0 %+v",
		replaced, deleted, readded, oldA, newB, onB, onC)
	assert.Check(t, oldA.MaxFrame <= replaced+batch, "old program of entry 0 ran for frame %d, after the batch in flight at the replace (frame %d)", oldA.MaxFrame-1, replaced)
	assert.Check(t, newB.MaxFrame > replaced && newB.Runs > 0, "new program of entry 0 never ran: %+v", newB)
	assert.Check(t, onB.MaxFrame <= deleted, "frame %d reached b0 after entry 1 was deleted at frame %d", onB.MaxFrame-1, deleted)
	assert.Check(t, onC.MaxFrame > readded && onC.Runs > 0, "re-added entry 1 (c0) got no frame: %+v", onC)

	// Every frame a devmap program passed was sent and received.
	// (Frames to entry 1 while it was deleted got the fallback XDP_DROP
	// from bpf_redirect_map and never reached a devmap program.)
	passed := oldA.Runs + newB.Runs + onB.Runs + onC.Runs
	l := settle(ctx, t, r, passed)
	assert.Check(t, is.Equal(l.DeviceDrops, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(l.Foreign, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(r.Received(t, r.Sink[1]), onB.Runs), "b0p; %v", l)
}
