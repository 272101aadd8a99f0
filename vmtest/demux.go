package vmtest

import (
	"fmt"
	"time"

	"github.com/xmitcheck/xmitcheck/vmtest/guest"
)

// demux turns the guest's two streams into Sink calls in order.
//
// Output frames name their binary, and an exit counts its binary's output
// bytes: events are applied in the order the guest sent them, but an exit
// waits until all of its binary's output was handed out, and output of a
// binary that has not started yet waits for its start. So a binary's exit
// always comes after all of its output, however the two streams interleave
// on the way.
type demux struct {
	sink Sink
	bins []Binary

	early     map[int][]byte // output of binaries not started yet
	delivered []int64        // output bytes handed out, per binary
	pending   []guest.Event
	cur       int // running binary, or -1

	hello, done bool
	started     time.Time // first binary's start
	guestErr    string
	modules     map[string]string
}

func newDemux(sink Sink, bins []Binary) *demux {
	return &demux{sink: sink, bins: bins, cur: -1, early: map[int][]byte{},
		delivered: make([]int64, len(bins)), modules: map[string]string{}}
}

// output takes one output frame.
func (d *demux) output(bin int, p []byte) {
	switch {
	case bin < 0 || bin >= len(d.bins):
		d.guestErr = fmt.Sprintf("guest sent output of binary %d of %d", bin, len(d.bins))
		return
	case bin != d.cur:
		d.early[bin] = append(d.early[bin], p...)
		return
	}
	d.deliver(bin, p)
	d.pump()
}

// event takes one event from the control stream.
func (d *demux) event(ev guest.Event) {
	d.pending = append(d.pending, ev)
	d.pump()
}

func (d *demux) deliver(bin int, p []byte) {
	if len(p) > 0 {
		d.sink.Output(d.bins[bin], p)
		d.delivered[bin] += int64(len(p))
	}
}

// pump applies the pending events that may be applied.
func (d *demux) pump() {
	for len(d.pending) > 0 {
		ev := d.pending[0]
		if ev.Ev == guest.EvExit && ev.Bin >= 0 && ev.Bin < len(d.bins) && d.delivered[ev.Bin] < ev.Off {
			return
		}
		d.pending = d.pending[1:]
		d.apply(ev)
	}
}

func (d *demux) apply(ev guest.Event) {
	switch ev.Ev {
	case guest.EvHello:
		d.hello = true
	case guest.EvModule:
		d.modules[ev.Name] = ev.Err
	case guest.EvStart:
		if ev.Bin < 0 || ev.Bin >= len(d.bins) {
			d.guestErr = fmt.Sprintf("guest started binary %d of %d", ev.Bin, len(d.bins))
			return
		}
		d.cur = ev.Bin
		if d.started.IsZero() {
			d.started = time.Now()
		}
		d.sink.Start(d.bins[ev.Bin])
		p := d.early[ev.Bin]
		delete(d.early, ev.Bin)
		d.deliver(ev.Bin, p)
	case guest.EvExit:
		if ev.Bin != d.cur {
			d.guestErr = fmt.Sprintf("guest reported the exit of binary %d while %d ran", ev.Bin, d.cur)
			return
		}
		d.sink.Exit(d.bins[ev.Bin], ev.Code)
		d.cur = -1
	case guest.EvError:
		d.guestErr = ev.Err
	case guest.EvDone:
		d.done = true
	}
}

// running says what the guest is doing, for error messages.
func (d *demux) running() string {
	switch {
	case !d.hello:
		return "the boot"
	case d.cur < 0:
		return "the time between test binaries"
	}
	return d.bins[d.cur].Name
}

// lost tells how many output bytes an exit still waits for; once both
// streams ended they were lost on the way.
func (d *demux) lost() int64 {
	if len(d.pending) == 0 {
		return 0
	}
	ev := d.pending[0]
	if ev.Ev != guest.EvExit || ev.Bin < 0 || ev.Bin >= len(d.bins) {
		return 0
	}
	return ev.Off - d.delivered[ev.Bin]
}
