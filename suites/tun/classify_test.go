package tun

import (
	"fmt"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/counters"
	"github.com/xmitcheck/xmitcheck/internal/feature"
	"github.com/xmitcheck/xmitcheck/internal/traffic"
	"github.com/xmitcheck/xmitcheck/internal/tuntap"
)

// TestProbe holds the IFF_BACKPRESSURE probe to the kernel's own answer:
// TUNGETFEATURES offers 0x80 exactly when TUNSETIFF keeps it (read back
// with TUNGETIFF). It then reports the probe's finding (feature.Require):
// the host judges it against what the kernel should have.
func TestProbe(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	features, err := tuntap.Features()
	assert.NilError(t, err)
	probe := tuntap.ProbeBackpressure()
	rig := newTap(t, tapOpts{ring: 16, limit: 16, flags: tuntap.IFFBackpressure, loose: true})
	flags, err := rig.dev.Flags()
	assert.NilError(t, err)
	t.Logf("TUNGETFEATURES=%#x; TUNGETIFF flags after TUNSETIFF with 0x80: %#x; IFF_BACKPRESSURE probe: %v", features, flags, probe)
	kept := flags&tuntap.IFFBackpressure != 0
	assert.Check(t, is.Equal(kept, probe == nil), "TUNGETFEATURES %#x, TUNGETIFF flags after TUNSETIFF with 0x80: %#x", features, flags)
	feature.Require(t, probe)
}

// TestClassify reports, for flag on/off x qdisc pfifo/noqueue, whether a
// tap whose reader is idle holds the frames beyond its ring in the qdisc
// ("backpressure") or drops them in tun ("taildrop"), then reads what it
// holds, in order. It asks for the flag without requiring it.
//
// Flag off with a qdisc is seed 002's subtest: 002 stops the queue at
// txqueuelen by default, so "backpressure" there is 002 present, exactly
// the old tail-drop is 002 absent (feature.Absent), anything else fails.
// The other three are seed 000's: backpressure only with the flag, offered,
// and a qdisc.
func TestClassify(t *testing.T) {
	feature.Of(t, feature.Seed000Tun)
	offered := tuntap.ProbeBackpressure() == nil
	for _, flag := range []bool{false, true} {
		for _, qdisc := range []string{"pfifo", "noqueue"} {
			name := "flag=off/qdisc=" + qdisc
			if flag {
				name = "flag=on/qdisc=" + qdisc
			}
			t.Run(name, func(t *testing.T) {
				o := tapOpts{ring: 16, loose: true}
				if qdisc == "pfifo" {
					o.limit = 64
				}
				if flag {
					o.flags = tuntap.IFFBackpressure
				}
				if !flag && qdisc == "pfifo" {
					feature.Of(t, feature.Seed002)
					stopByDefault(t, classify(t, o))
					return
				}
				c := classify(t, o)
				want := "taildrop"
				if flag && offered && qdisc == "pfifo" {
					want = "backpressure"
				}
				assert.Check(t, is.Equal(c.shape, want), "flag asked %v, offered %v, qdisc %s; %v", flag, offered, qdisc, c)
				assert.Check(t, is.Equal(c.enetdown, 0), "sendto ENETDOWN: the queue was stopped with no qdisc to hold frames; %v", c)
				if c.shape == "backpressure" {
					feature.Shows(t, feature.Seed000Tun, "flag on, pfifo: the queue stopped at the full ring and the qdisc held the rest")
				}
			})
		}
	}
}

// stopByDefault judges seed 002 on what classify saw with the flag off and
// a pfifo: the queue stopped at txqueuelen (the qdisc held the rest, tun
// dropped nothing, every frame was read in order) is 002 present; exactly
// the tail-drop from before it is 002 absent; anything else is a failure.
func stopByDefault(t *testing.T, c classified) {
	t.Helper()
	extra := uint64(c.n - c.ring)
	switch {
	case c.shape == "backpressure" && c.st.Q.Drops == 0 && c.enetdown == 0 && c.read == c.n && readFirst(c.r, 1, c.n):
		feature.Shows(t, feature.Seed002, fmt.Sprintf("flag off, pfifo: the queue stopped at txqueuelen %d, the qdisc held the rest, every frame read in order", c.ring))
		t.Logf("%v", c)
	case c.shape == "taildrop" && c.st.Link.TxDropped == extra && c.st.Q.Drops == 0 && c.res.Refused == 0 &&
		c.enetdown == 0 && c.read == c.ring && readFirst(c.r, 1, c.ring):
		feature.Absent(t, feature.Seed002, fmt.Sprintf(
			"flag off, pfifo: the ring filled at txqueuelen %d, tun tx_dropped grew by %d of %d sent, the qdisc held and dropped none (the queue never stopped), the reader got frames 0-%d",
			c.ring, extra, c.n, c.ring-1))
	default:
		t.Fatalf("flag off, pfifo: neither a queue stopped at txqueuelen nor the old tail-drop: %v", c)
	}
}

// classified is what classify saw.
type classified struct {
	shape     string // "backpressure", "taildrop" or "mixed"
	ring, n   int    // txqueuelen, frames sent
	res       traffic.Result
	enetdown  int   // sends that got ENETDOWN
	st        state // settled, before reading
	read      int   // frames read then
	r         *traffic.Reader
	afterRead counters.Accounting
}

func (c classified) String() string {
	return fmt.Sprintf("behaviour %s: %d sent (refused %d, ENETDOWN %d), settled at %v; then read %d (%v); ledger after reading: %v",
		c.shape, c.n, c.res.Refused, c.enetdown, c.st, c.read, c.r.Streams[1], c.afterRead)
}

// classify sends R+32 frames one by one to an idle reader, lets the
// counters settle, names the shape, then reads every frame the tap holds
// and asserts the ledger and the stream's order (fatally: a verdict comes
// after them).
func classify(t *testing.T, o tapOpts) classified {
	t.Helper()
	rig := newTap(t, o)
	s := rig.sender(t, 1)
	c := classified{ring: o.ring, n: o.ring + 32}
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
	// Settled: every frame passed the qdisc, sits in it or was dropped by
	// it (a frame requeued at the stop counts twice, hence >=), and two
	// samples in a row agree.
	var prev state
	settled := rig.waitState(t, "frames settled", func(st state) bool {
		ok := st == prev && (o.limit == 0 || st.Q.Packets+st.Q.Qlen+st.Q.Drops >= uint64(c.n))
		prev = st
		return ok
	})
	c.st = rig.holdState(t, "settled counters", func(st state) bool { return st == settled })
	switch {
	case c.st.Link.TxDropped > 0 && c.st.Q.Qlen == 0:
		c.shape = "taildrop"
	case c.st.Link.TxDropped == 0 && c.st.Q.Qlen > 0:
		c.shape = "backpressure"
	default:
		c.shape = "mixed"
	}

	c.r = traffic.NewReader(rig.dev.File)
	c.read = drain(t, c.r)
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
