package vmtest

import (
	"fmt"
	"time"

	"github.com/xmitcheck/xmitcheck/vmtest/guest"
)

// demux turns the guest's two streams into Sink calls in order.
//
// The control stream says at which output offset each binary starts and
// ends; output bytes are handed to the running binary, and a start or exit
// is applied only once all output before its offset has been handed out.
// So a binary's exit always comes after all of its output, however the
// two streams interleave on the way.
type demux struct {
	sink Sink
	bins []Binary

	buf       []byte // output received but not yet handed out
	delivered int64  // output bytes handed out
	pending   []guest.Event
	cur       int // running binary, or -1

	hello, done bool
	started     time.Time // first binary's start
	guestErr    string
	modules     map[string]string
}

func newDemux(sink Sink, bins []Binary) *demux {
	return &demux{sink: sink, bins: bins, cur: -1, modules: map[string]string{}}
}

// output takes bytes from the output stream.
func (d *demux) output(p []byte) {
	d.buf = append(d.buf, p...)
	d.pump()
}

// event takes one event from the control stream.
func (d *demux) event(ev guest.Event) {
	d.pending = append(d.pending, ev)
	d.pump()
}

func (d *demux) pump() {
	for {
		if len(d.pending) > 0 && d.pending[0].Off <= d.delivered {
			ev := d.pending[0]
			d.pending = d.pending[1:]
			d.apply(ev)
			continue
		}
		if d.cur < 0 || len(d.buf) == 0 {
			return
		}
		n := int64(len(d.buf))
		if len(d.pending) > 0 {
			n = min(n, d.pending[0].Off-d.delivered)
		}
		d.sink.Output(d.bins[d.cur], d.buf[:n:n])
		d.buf = d.buf[n:]
		d.delivered += n
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

// running names the binary that is running, for error messages.
func (d *demux) running() string {
	if d.cur < 0 {
		return "no test binary"
	}
	return d.bins[d.cur].Name
}

// lost tells how many output bytes the control stream accounted for that
// never arrived, once both streams ended.
func (d *demux) lost() int64 {
	var want int64
	for _, ev := range d.pending {
		want = max(want, ev.Off)
	}
	return want - d.delivered
}
