package devmap

import (
	"context"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/kmsg"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
)

const (
	xdpDrop  = 1 // enum xdp_action XDP_DROP: bpf_redirect_map's fallback for a missing key
	progress = 256
)

// TestLifecycle/ChangeEntriesWhileFlowing: while bursts of 64 frames flow
// (alternating keys 0 and 1), the test replaces entry 0's program, deletes
// entry 1 and re-adds it pointing at another device. Seed 004 keeps an
// entry's program referenced until the bulk queue flushes, so:
//   - after a delete returns, no frame numbered from then on reaches the
//     deleted entry's device (M looks the entry up after numbering);
//   - after a program is replaced, the old one runs at most for the rest of
//     the poll in flight (the queue latched it), never after;
//   - the kernel logs no splat and gains no splat taint (internal/guest/kmsg).
func TestLifecycle(t *testing.T) {
	observe.Of(t, feature.Seed004)
	for _, hash := range []bool{false, true} {
		name := "ChangeEntriesWhileFlowing"
		if hash {
			name += "/Hash"
		}
		t.Run(name, func(t *testing.T) {
			eachDriver(t, func(t *testing.T, r *rig, d driver) {
				testLifecycle(t, r, d, hash)
			})
		})
	}
}

func testLifecycle(t *testing.T, r *rig, d driver, hash bool) {
	ctx := withDeadline(t)
	kmsg.Watch(t)
	m := r.devmap(t, hash)
	a0, b0, c0 := r.dst[0], r.dst[1], r.dst[2]
	r.setEntry(t, m, 0, a0, r.objs.XdpDevmapA)
	r.setEntry(t, m, 1, b0, r.objs.XdpDevmapA)
	r.setConfig(t, func(c *bpfConfig) { c.Flags = xdpDrop })
	r.route(t, 0, 1)

	f := startFlow(ctx, t, r, d)
	f.advance("before the first change")
	r.setEntry(t, m, 0, a0, r.objs.XdpDevmapB)
	replaced := f.frames()
	f.advance("after replacing entry 0's program")
	if err := r.env.Do(func() error { return m.Delete(uint32(1)) }); err != nil {
		t.Fatalf("delete devmap entry 1: %v", err)
	}
	deleted := f.frames()
	f.advance("after deleting entry 1")
	r.setEntry(t, m, 1, c0, r.objs.XdpDevmapA)
	readded := f.frames()
	f.advance("after re-adding entry 1")
	f.stop()

	oldA, newB := r.seen(t, a0, progA), r.seen(t, a0, progB)
	onB, onC := r.seen(t, b0, progA), r.seen(t, c0, progA)
	t.Logf("frames numbered: program replaced at %d, entry 1 deleted at %d, re-added at %d; "+
		"a0: A %+v B %+v; b0 %+v; c0 %+v", replaced, deleted, readded, oldA, newB, onB, onC)
	assert.Check(t, oldA.MaxFrame <= replaced+maxPoll,
		"old program of entry 0 ran for frame %d, after the poll in flight at the replace (frame %d)",
		oldA.MaxFrame-1, replaced)
	assert.Check(t, newB.MaxFrame > replaced && newB.Runs > 0, "new program of entry 0 never ran: %+v", newB)
	assert.Check(t, onB.MaxFrame <= deleted,
		"frame %d reached b0 after entry 1 was deleted at frame %d", onB.MaxFrame-1, deleted)
	assert.Check(t, onC.MaxFrame > readded && onC.Runs > 0, "re-added entry 1 (c0) got no frame: %+v", onC)

	// Every frame a devmap program passed was sent and received. (Frames
	// to entry 1 while it was deleted got the fallback XDP_DROP from
	// bpf_redirect_map and never reached a devmap program.)
	l := settle(ctx, t, r, oldA.Runs+newB.Runs+onB.Runs+onC.Runs)
	assert.Check(t, is.Equal(l.DeviceDrops, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(l.foreign, uint64(0)), "%v", l)
	assert.Check(t, is.Equal(r.received(t, r.sink[1]), onB.Runs), "b0p; %v", l)
}

// flow is traffic pushed in bursts of maxPoll by a driver until stopped.
type flow struct {
	ctx    context.Context
	t      *testing.T
	r      *rig
	cancel context.CancelFunc
	done   chan error
}

func startFlow(ctx context.Context, t *testing.T, r *rig, d driver) *flow {
	flowCtx, cancel := context.WithCancel(ctx)
	f := &flow{ctx: ctx, t: t, r: r, cancel: cancel, done: make(chan error, 1)}
	go func() {
		for flowCtx.Err() == nil {
			if err := d.push(flowCtx, 64*maxPoll, maxPoll); err != nil && flowCtx.Err() == nil {
				f.done <- err
				return
			}
		}
		f.done <- nil
	}()
	return f
}

// frames is how many frames the main program has numbered.
func (f *flow) frames() uint32 { return f.r.state(f.t).Frames }

// advance waits until the traffic has numbered progress more frames.
func (f *flow) advance(what string) {
	f.t.Helper()
	now := f.frames()
	get := func() (uint32, error) { return f.frames(), nil }
	advanced := func(n uint32) bool { return n >= now+progress }
	if _, err := counters.WaitFor(f.ctx, 20*time.Second, get, advanced); err != nil {
		f.cancel()
		f.t.Fatalf("traffic stalled %s: %v (driver: %v)", what, err, <-f.done)
	}
}

// stop ends the traffic and waits until nothing moves any more: frames the
// driver sent last may still be in NAPI on the peer, counted as received
// but not yet as passed.
func (f *flow) stop() {
	f.t.Helper()
	f.cancel()
	assert.NilError(f.t, <-f.done)
	moved := func() (uint64, error) { return uint64(f.frames()) + f.r.receivedAll(f.t), nil }
	if _, err := counters.WaitSteady(f.ctx, 20*time.Second, 100*time.Millisecond, moved); err != nil {
		f.t.Fatalf("traffic did not stop after the driver did: %v", err)
	}
}
