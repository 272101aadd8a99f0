package tun

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/xmitcheck/xmitcheck/internal/guest/counters"
	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
)

// queueReader reads a queue file: a *traffic.Reader, or an entryReader
// where each read carries more than a frame. Both count what they read in
// ring entries, one read each.
type queueReader interface {
	Read(n int, wait time.Duration) (int, error)
}

// drain reads q until its ring is empty and nothing more can reach it,
// failing on anything that is not an xmitcheck frame, and returns how many
// entries it read. Nothing more can come once the counters have every
// frame the qdisc handed tun read or dropped, and none queued
// (state.settled); where they cannot tell (a ring purged at a detach frees
// frames no counter has, another queue's backlog waits), it reads on until
// no entry came for quiet, as long as a frame still moving from the qdisc
// takes.
func (rig *tapRig) drain(t testing.TB, q queueReader) int {
	t.Helper()
	total, last := 0, time.Now()
	for {
		n, err := q.Read(1024, settleProbe)
		total += n
		assert.NilError(t, err, "reading the tap after %d entries", total)
		if n == 1024 {
			continue
		}
		if n > 0 {
			last = time.Now()
		}
		st, err := rig.state()
		assert.NilError(t, err)
		if st.settled() || time.Since(last) >= quiet {
			return total
		}
	}
}

// readExactly reads n frames, each within waitLimit.
func readExactly(t testing.TB, r queueReader, n int) {
	t.Helper()
	got, err := r.Read(n, waitLimit)
	assert.NilError(t, err)
	assert.Equal(t, got, n, "read %d of %d frames before the ring stayed empty for %v", got, n, waitLimit)
}

// span is the sequence numbers [from, to) a sender used for its stream.
type span struct{ from, to uint64 }

// numbered is a sender of sequence-numbered frames (traffic.Sender,
// gsoSender).
type numbered interface {
	Stream() uint32
	Next() uint64
}

// sentBy is what each sender numbered, from its first frame on.
func sentBy[S numbered](ss ...S) map[uint32]span {
	m := map[uint32]span{}
	for _, s := range ss {
		m[s.Stream()] = span{0, s.Next()}
	}
	return m
}

// checkStreams holds what the readers read to what the senders numbered
// and to the ledger l: every stream arrived in order with no frame twice,
// only with numbers its sender used, and the frames missing from the
// streams are exactly the ledger's frames not received (dropped by tun or
// the qdisc, still queued, freed uncounted). Several readers may share a
// stream (the queues of one tap, a probe beside a reader); each must see
// it in order.
func checkStreams(t testing.TB, l counters.Accounting, sent map[uint32]span, readers ...*traffic.Reader) {
	t.Helper()
	var numbered, missing uint64
	for stream, sp := range sent {
		numbered += sp.to - sp.from
		m := sp.to - sp.from
		for _, r := range readers {
			got, err := r.Missing(stream, sp.from, sp.to)
			assert.Check(t, err)
			m -= sp.to - sp.from - got
		}
		missing += m
	}
	for i, r := range readers {
		assert.Check(t, r.InOrder(), "reader %d; %v", i, l)
		for stream := range r.Streams {
			_, ok := sent[stream]
			assert.Check(t, ok, "reader %d read stream %d, which no sender of the test sent", i, stream)
		}
	}
	assert.Check(t, is.Equal(numbered, l.Sent), "frames the senders numbered, against the ledger's sent; %v", l)
	notReceived := l.DeviceDrops + l.QdiscDrops + l.QdiscBacklog + l.InDevice + l.Uncounted
	assert.Check(t, is.Equal(missing, notReceived),
		"frames missing from the streams, against the ledger's drops, queued and uncounted; %v", l)
}

// readFirst reports whether r read exactly the first n frames of stream
// (numbers 0 to n-1) and nothing else of it: what tail-drop, a qdisc's
// tail-drop and a stopped queue all leave for an idle reader.
func readFirst(r *traffic.Reader, stream uint32, n int) bool {
	return readSpan(r, stream, 0, n)
}

// readSpan reports whether r read exactly the n frames of stream from
// number first on, in order, and nothing else of it.
func readSpan(r *traffic.Reader, stream uint32, first, n int) bool {
	s := r.Streams[stream]
	if n == 0 {
		return s == nil
	}
	want := traffic.Stream{Frames: uint64(n), First: uint64(first), Last: uint64(first + n - 1), InOrder: uint64(n)}
	return s != nil && *s == want
}

// checkFirst asserts readFirst.
func checkFirst(t testing.TB, r *traffic.Reader, stream uint32, n int) {
	t.Helper()
	assert.Check(t, readFirst(r, stream, n),
		"stream %d: want exactly its first %d frames, read %v", stream, n, r.Streams[stream])
}
