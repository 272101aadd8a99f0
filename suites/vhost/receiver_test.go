package vhost

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/margin"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

// receiver checks every frame a guest receives: the 12-byte virtio-net
// header that tun wrote (no offloads), then exactly the frame that was sent,
// with sequence numbers increasing per stream (gaps are drops; a repeat or a
// step back is corruption).
type receiver struct {
	next  map[uint32]uint64
	got   uint64
	first error
	seqs  []uint64 // when recording, every sequence number, in arrival order
	rec   bool
	// anyOrder leaves a stream's order unchecked: where frames change
	// queues under the test (TestDetachRace), the order is not promised.
	anyOrder bool
	// numBuffers is the header's num_buffers: with mergeable buffers the
	// buffers each frame took; else 1 where vhost writes it (VERSION_1)
	// and 0 where it does not.
	numBuffers []uint16
}

// receiver returns a receiver for the rig's guests, recording sequence
// numbers when record is set.
func (r *rig) receiver(record bool) *receiver {
	rv := &receiver{next: map[uint32]uint64{}, rec: record, numBuffers: []uint16{0, 1}}
	if r.mrg {
		rv.numBuffers = []uint16{uint16(r.bufs)}
	}
	return rv
}

func (rv *receiver) check(data []byte) {
	rv.got++
	if rv.first == nil {
		rv.first = rv.parse(data)
	}
}

// parse checks one frame and records its sequence number.
func (rv *receiver) parse(data []byte) error {
	if len(data) != vhostnet.HdrLen+traffic.FrameLen {
		return fmt.Errorf("frame %d: %d bytes in the buffer, want %d header + %d frame",
			rv.got, len(data), vhostnet.HdrLen, traffic.FrameLen)
	}
	// struct virtio_net_hdr (10 bytes) all zero: no checksum or GSO;
	// then num_buffers (2 bytes, little endian).
	hdr, frame := data[:vhostnet.HdrLen], data[vhostnet.HdrLen:]
	if !bytes.Equal(hdr[:10], make([]byte, 10)) || !slices.Contains(rv.numBuffers, binary.LittleEndian.Uint16(hdr[10:])) {
		return fmt.Errorf("frame %d: virtio-net header % x, want zeros and num_buffers in %v", rv.got, hdr, rv.numBuffers)
	}
	stream, seq, err := traffic.Parse(frame)
	if err != nil {
		return fmt.Errorf("frame %d: %w: % x", rv.got, err, frame)
	}
	if want := traffic.Frame(traffic.SourceMAC(stream), stream, seq); !bytes.Equal(frame, want) {
		return fmt.Errorf("frame %d (stream %d seq %d) corrupted:\n got % x\nwant % x", rv.got, stream, seq, frame, want)
	}
	if seq < rv.next[stream] && !rv.anyOrder {
		return fmt.Errorf("frame %d: stream %d seq %d after seq %d", rv.got, stream, seq, rv.next[stream]-1)
	}
	rv.next[stream] = max(rv.next[stream], seq+1)
	if rv.rec {
		rv.seqs = append(rv.seqs, seq)
	}
	return nil
}

// streams is every stream the receiver got a frame of, in order.
func (rv *receiver) streams() []uint32 {
	k := make([]uint32, 0, len(rv.next))
	for s := range rv.next {
		k = append(k, s)
	}
	slices.Sort(k)
	return k
}

// collect takes what guest g has received, reposting every buffer it
// frees, until done accepts the receiver or wait passes; it fails the test
// with what it last saw.
func (r *rig) collect(g *vhostnet.Net, rv *receiver, done func(*receiver) bool) {
	r.tb.Helper()
	r.receive(g, rv, -1, done)
}

// receive posts post buffers (all free ones, again after every collection,
// when post < 0) and collects what guest g receives until done accepts the
// receiver. It fails the test when no frame comes for wait: a guest that
// drains a large backlog takes as long as the backlog needs, every gap
// between its frames bounded.
func (r *rig) receive(g *vhostnet.Net, rv *receiver, post int, done func(*receiver) bool) {
	r.tb.Helper()
	if post >= 0 {
		_, err := g.Post(post)
		assert.NilError(r.tb, err)
	}
	last := time.Now()
	var gap time.Duration // the longest wait for a frame so far
	for {
		if post < 0 {
			_, err := g.Post(g.RX.Free())
			assert.NilError(r.tb, err)
		}
		n, err := g.Receive(rv.check)
		assert.NilError(r.tb, err)
		assert.NilError(r.tb, rv.first)
		now := time.Now()
		gap = max(gap, now.Sub(last))
		if n > 0 {
			last = now
		}
		if done(rv) {
			margin.Note(wait, gap, false)
			return
		}
		if now.Sub(last) > wait || r.ctx.Err() != nil {
			margin.Note(wait, now.Sub(last), true)
			s, _ := r.state()
			r.tb.Fatalf("guest stalled: received %d, none for %v, %d buffers posted; %v",
				rv.got, now.Sub(last).Round(time.Millisecond), g.RX.Posted(), s)
		}
		if n == 0 {
			_, err := g.WaitCall(5 * time.Millisecond)
			assert.NilError(r.tb, err)
		}
	}
}
