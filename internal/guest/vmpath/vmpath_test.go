package vmpath

import (
	"fmt"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestMbits(t *testing.T) {
	w := Window{Took: 2 * time.Second, Bytes: 250000}
	assert.Equal(t, w.Mbits(), 1.0, "250 kB in 2 s")
}

// TestStreams: two TCP streams cross the path of each consumer, with the
// flag and without, with offloads and without, and every byte written is
// read (Finish). The path is built in namespaces of its own (netenv: root,
// not with -short).
func TestStreams(t *testing.T) {
	for _, c := range []Consumer{Read, VhostNet} {
		for _, offload := range []bool{false, true} {
			for _, bp := range []bool{false, true} {
				cfg := Config{Consumer: c, Offload: offload, Backpressure: bp}
				name := fmt.Sprintf("%s/offload=%v/backpressure=%v", c, offload, bp)
				t.Run(name, func(t *testing.T) { streams(t, cfg) })
			}
		}
	}
}

func streams(t *testing.T, cfg Config) {
	p := New(t, cfg)
	s := p.Streams(t, 2)
	w, err := s.Send(300 * time.Millisecond)
	assert.NilError(t, err)
	s.Finish()
	c, err := p.Counters()
	assert.NilError(t, err)
	t.Logf("%v: %d bytes in %v (%.0f Mbit/s), %d retransmitted; %v; %v",
		cfg, w.Bytes, w.Took, w.Mbits(), w.Retrans, c.Link, c.Qdisc)
	assert.Assert(t, w.Bytes > 0, "no byte read in the window")
}
