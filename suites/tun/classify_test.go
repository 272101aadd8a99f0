package tun

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/observe"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// TestProbe holds the IFF_BACKPRESSURE probe to the kernel's own answer:
// TUNGETFEATURES offers 0x80 exactly when TUNSETIFF keeps it (read back
// with TUNGETIFF). It then reports the probe's finding (feature.Require):
// the host judges it against what the kernel should have.
func TestProbe(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	features, err := tuntap.Features()
	assert.NilError(t, err)
	probe := tuntap.ProbeBackpressure()
	rig := newTap(t, tapOpts{ring: 16, limit: 16, flags: tuntap.IFFBackpressure, loose: true})
	flags, err := rig.dev.Flags()
	assert.NilError(t, err)
	t.Logf("TUNGETFEATURES=%#x; TUNGETIFF flags after TUNSETIFF with 0x80: %#x; IFF_BACKPRESSURE probe: %v",
		features, flags, probe)
	kept := flags&tuntap.IFFBackpressure != 0
	assert.Check(t, is.Equal(kept, probe == nil),
		"TUNGETFEATURES %#x, TUNGETIFF flags after TUNSETIFF with 0x80: %#x", features, flags)
	observe.Probe(t, feature.IFFBackpressure, probe)
}

// TestClassify sends R+32 frames to an idle reader, for flag on/off x
// qdisc pfifo/noqueue, asking for the flag without requiring it, and
// judges where the frames beyond the ring went: held by the qdisc behind
// a stopped queue, or dropped by tun (tail-drop).
//
// Flag off with a pfifo is seed 002's subtest (002 stops the queue at
// txqueuelen by default). The other three are seed 000's: a stopped queue
// only with the flag kept and a qdisc; with them, exactly the tail-drop is
// 000 absent. For either seed, any other outcome fails.
func TestClassify(t *testing.T) {
	observe.Of(t, feature.Seed000Tun)
	for _, flag := range []uint16{0, tuntap.IFFBackpressure} {
		for _, limit := range []uint32{64, 0} {
			o := tapOpts{ring: 16, limit: limit, flags: flag, loose: true}
			t.Run(fmt.Sprintf("flag=%s/qdisc=%s", onOff(flag != 0), qdiscName(limit)), func(t *testing.T) {
				if flag == 0 && limit > 0 {
					observe.Of(t, feature.Seed002)
					switch c := classify(t, o); c.outcome() {
					case "stopped":
						observe.Shows(t, feature.Seed002, c.why())
					case "stock":
						observe.Absent(t, feature.Seed002, c.why())
					default:
						t.Fatal(c.why())
					}
					return
				}
				c := classify(t, o)
				if !c.kept || limit == 0 {
					assert.Check(t, c.stock(), "no stopped queue without the flag kept and a qdisc: want exactly the tail-drop; %v", c)
					return
				}
				switch c.outcome() {
				case "stopped":
					observe.Shows(t, feature.Seed000Tun, c.why())
				case "stock":
					observe.Absent(t, feature.Seed000Tun, c.why())
				default:
					t.Fatal(c.why())
				}
			})
		}
	}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func qdiscName(limit uint32) string {
	if limit == 0 {
		return "noqueue"
	}
	return "pfifo"
}

// outcome names what classify saw where a seed stops the queue: "stopped"
// (the qdisc held the rest, nothing dropped, every frame read in order)
// shows the seed; "stock", exactly the tail-drop from before it, is the
// seed absent; "" is anything else, a failure. The stop point is not
// judged here: 002, on the socket queue that preceded the ring, stopped
// one frame later than 000, whose exact point TestBackpressure holds.
func (c classified) outcome() string {
	switch {
	case c.stopped():
		return "stopped"
	case c.stock():
		return "stock"
	}
	return ""
}

// why says what the outcome was, for the verdict.
func (c classified) why() string {
	flag := "flag off"
	if c.kept {
		flag = "IFF_BACKPRESSURE kept"
	}
	switch c.outcome() {
	case "stopped":
		return fmt.Sprintf("%s, pfifo: the queue stopped at txqueuelen %d, the qdisc held the rest, "+
			"every frame read in order", flag, c.ring)
	case "stock":
		return fmt.Sprintf("%s, pfifo: the ring filled at txqueuelen %d, tun tx_dropped grew by %d of %d sent, "+
			"the qdisc held and dropped none (the queue never stopped), the reader got frames 0-%d",
			flag, c.ring, c.n-c.ring, c.n, c.ring-1)
	}
	return fmt.Sprintf("%s, pfifo: neither a stopped queue nor the old tail-drop: %v", flag, c)
}

// classified is what classify saw.
type classified struct {
	ring, n   int    // txqueuelen, frames sent
	flags     uint16 // TUNGETIFF's flags
	kept      bool   // TUNGETIFF kept IFF_BACKPRESSURE
	res       traffic.Result
	enetdown  int   // sends that got ENETDOWN
	st        state // settled, before reading
	read      int   // frames read then
	r         *traffic.Reader
	afterRead counters.Accounting
}

// stopped: the qdisc held frames beyond the ring, nothing was dropped,
// and the reader got them all, in order.
func (c classified) stopped() bool {
	return c.st.Link.TxDropped == 0 && c.st.Q.Qlen > 0 && c.st.Q.Drops == 0 &&
		c.enetdown == 0 && c.read == c.n && readFirst(c.r, 1, c.n)
}

// stock: exactly the tail-drop, tun dropped every frame beyond the ring,
// the qdisc held and dropped none, the reader got the first R.
func (c classified) stock() bool {
	return c.st.Link.TxDropped == uint64(c.n-c.ring) && c.st.Q.Qlen == 0 && c.st.Q.Drops == 0 &&
		c.enetdown == 0 && c.read == c.ring && readFirst(c.r, 1, c.ring)
}

func (c classified) String() string {
	return fmt.Sprintf("TUNGETIFF flags %#x; %d sent (refused %d, ENETDOWN %d), settled at %v; "+
		"then read %d (%v); ledger after reading: %v",
		c.flags, c.n, c.res.Refused, c.enetdown, c.st, c.read, c.r.Streams[1], c.afterRead)
}

// classify sends R+32 frames one by one to an idle reader, lets the
// counters settle, then reads every frame the tap holds and asserts the
// ledger and the stream's order (fatally: a verdict comes after them).
func classify(t *testing.T, o tapOpts) classified {
	t.Helper()
	rig := newTap(t, o)
	c := classified{ring: o.ring, n: o.ring + 32}
	var err error
	c.flags, err = rig.dev.Flags()
	assert.NilError(t, err)
	c.kept = c.flags&tuntap.IFFBackpressure != 0
	s := rig.sender(t, 1)
	for range c.n {
		r, err := s.Send(1)
		if isENETDOWN(err) {
			c.enetdown++
			continue
		}
		assert.NilError(t, err)
		c.res.Sent += r.Sent
		c.res.Refused += r.Refused
	}
	c.st = rig.settle(t, c.n)
	c.r = traffic.NewReader(rig.dev.File)
	c.read = rig.drain(t, c.r)
	st := rig.waitState(t, "empty qdisc", func(now state) bool { return now.Q.Qlen == 0 })
	// An ENETDOWN frame reached the device with its queue stopped and was
	// dropped there (tx_dropped): it belongs in the ledger.
	c.afterRead = account(c.res.Handed()+uint64(c.enetdown), c.read, st, 0)
	t.Logf("%v", c)
	assert.Assert(t, c.afterRead.Balanced(), "%v", c)
	checkStreams(t, c.afterRead, sentBy(s), c.r)
	if t.Failed() {
		t.FailNow()
	}
	return c
}

// settle waits, without a model, until every one of n frames passed the
// qdisc, sits in it or was dropped by it (a frame requeued at a stop
// counts twice, hence >=) and two samples in a row agree, then checks
// the counters hold still.
func (rig *tapRig) settle(t *testing.T, n int) state {
	t.Helper()
	var prev state
	settled := rig.waitState(t, "frames settled", func(now state) bool {
		ok := now == prev && (rig.opts.limit == 0 || now.Q.Packets+now.Q.Qlen+now.Q.Drops >= uint64(n))
		prev = now
		return ok
	})
	return rig.holdState(t, "settled counters", func(now state) bool { return now == settled })
}
