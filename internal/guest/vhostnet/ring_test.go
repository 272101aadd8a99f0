package vhostnet

import (
	"encoding/binary"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestLayout(t *testing.T) {
	l, err := NewLayout(256)
	assert.NilError(t, err)
	// vring_size(256, 4096) from include/uapi/linux/virtio_ring.h:
	// ALIGN(16*256 + 2*(3+256), 4096) + 2*3 + 8*256.
	assert.DeepEqual(t, l, Layout{Num: 256, Desc: 0, Avail: 4096, Used: 8192, Size: 8192 + 6 + 2048})
	for _, bad := range []int{0, 3, 100, 65536} {
		_, err := NewLayout(bad)
		assert.Check(t, is.ErrorContains(err, "power of two"), "queue size %d", bad)
	}
}

// device plays vhost on a Ring: it takes avail entries and returns them as
// used, writing a payload into each buffer.
type device struct {
	r         *Ring
	lastAvail uint16
	usedIdx   uint16
}

func (d *device) availIdx() uint16 {
	return binary.LittleEndian.Uint16(d.r.mem[d.r.Avail+2:])
}

// fill uses up to n available buffers, writing payload(i) into each.
func (d *device) fill(t *testing.T, n int, payload func() []byte) int {
	t.Helper()
	done := 0
	for ; done < n && d.lastAvail != d.availIdx(); done++ {
		id := binary.LittleEndian.Uint16(d.r.mem[d.r.Avail+4+2*(int(d.lastAvail)%d.r.Num):])
		desc := d.r.mem[d.r.Desc+descSize*int(id):]
		addr := binary.LittleEndian.Uint64(desc[0:])
		length := binary.LittleEndian.Uint32(desc[8:])
		flags := binary.LittleEndian.Uint16(desc[12:])
		assert.Equal(t, addr, d.r.BufAddr(id), "descriptor %d address", id)
		assert.Assert(t, flags == descFlagWrite && int(length) == d.r.bufSize || flags == 0 && int(length) <= d.r.bufSize,
			"descriptor %d: flags %#x length %d", id, flags, length)
		p := payload()
		copy(d.r.bufs[int(addr-d.r.bufAddr):], p)
		e := d.r.mem[d.r.Used+4+usedElemSize*(int(d.usedIdx)%d.r.Num):]
		binary.LittleEndian.PutUint32(e[0:], uint32(id))
		binary.LittleEndian.PutUint32(e[4:], uint32(len(p)))
		d.lastAvail++
		d.usedIdx++
	}
	binary.LittleEndian.PutUint16(d.r.mem[d.r.Used+2:], d.usedIdx)
	return done
}

func newTestRing(t *testing.T, num, bufSize int) *Ring {
	t.Helper()
	l, err := NewLayout(num)
	assert.NilError(t, err)
	mem := make([]byte, l.memSize())
	bufs := make([]byte, num*bufSize)
	r, err := newRing(l, mem, bufs, bufSize, 0x100000)
	assert.NilError(t, err)
	return r
}

func TestRingRoundTrip(t *testing.T) {
	r := newTestRing(t, 8, 64)
	d := &device{r: r}
	assert.Equal(t, r.PostWritable(5), 5)
	assert.Equal(t, r.Posted(), 5)
	assert.Equal(t, d.availIdx(), uint16(5))
	assert.Equal(t, r.PostWritable(10), 3, "only 3 descriptors are left")
	assert.Equal(t, r.Free(), 0)

	seq := byte(0)
	payload := func() []byte { seq++; return []byte{seq, seq, seq} }
	assert.Equal(t, d.fill(t, 6, payload), 6)
	assert.Equal(t, r.Pending(), 6)
	var got []byte
	n, err := r.Collect(func(b []byte) {
		assert.Equal(t, len(b), 3)
		got = append(got, b[0])
	})
	assert.NilError(t, err)
	assert.Equal(t, n, 6)
	assert.DeepEqual(t, got, []byte{1, 2, 3, 4, 5, 6})
	assert.Equal(t, r.Posted(), 2)
	assert.Equal(t, r.Pending(), 0)
}

// TestRingWraps runs the 16-bit avail and used indexes past 65535 on a
// small ring, in uneven batches, and checks nothing is lost or duplicated.
func TestRingWraps(t *testing.T) {
	r := newTestRing(t, 4, 16)
	d := &device{r: r}
	var sent, got uint32
	payload := func() []byte {
		b := binary.LittleEndian.AppendUint32(nil, sent)
		sent++
		return b
	}
	for i := 0; sent < 70000; i++ {
		r.PostWritable(1 + i%4)
		d.fill(t, 1+i%3, payload)
		_, err := r.Collect(func(b []byte) {
			assert.Equal(t, binary.LittleEndian.Uint32(b), got)
			got++
		})
		assert.NilError(t, err)
	}
	assert.Equal(t, got, sent)
	assert.Assert(t, d.usedIdx < 70000-65536+4, "indexes wrapped: used idx %d", d.usedIdx)
}

func TestRingRejectsForeignUsedEntry(t *testing.T) {
	r := newTestRing(t, 4, 16)
	e := r.mem[r.Used+4:]
	binary.LittleEndian.PutUint32(e[0:], 2) // never posted
	binary.LittleEndian.PutUint32(e[4:], 8)
	binary.LittleEndian.PutUint16(r.mem[r.Used+2:], 1)
	_, err := r.Collect(nil)
	assert.ErrorContains(t, err, "not a posted buffer")
}

func TestConfig(t *testing.T) {
	l, err := Config{}.withDefaults().layout()
	assert.NilError(t, err)
	assert.Equal(t, l.Num, DefaultQueueSize)
	_, err = Config{QueueSize: 8, BufSize: 32}.layout()
	assert.ErrorContains(t, err, "buffer size 32 is below 72")
	_, err = Config{QueueSize: 6, BufSize: 2048}.layout()
	assert.ErrorContains(t, err, "power of two")
	_, err = Config{QueueSize: 8, BufSize: 40, Features: FeatureMrgRxBuf}.layout()
	assert.NilError(t, err, "mergeable buffers may be smaller than a frame")
	_, err = Config{QueueSize: 8, BufSize: 12, Features: FeatureMrgRxBuf}.layout()
	assert.ErrorContains(t, err, "buffer size 12 is below 13")
	_, err = Config{QueueSize: 8, BufSize: 2048, Features: FeatureVersion1}.layout()
	assert.ErrorContains(t, err, "not among those the guest implements")
}

func TestRingPostReadable(t *testing.T) {
	r := newTestRing(t, 4, 16)
	hdr := []byte{0xaa, 0xbb}
	_, err := r.PostReadable(hdr, [][]byte{make([]byte, 15)})
	assert.ErrorContains(t, err, "do not fit")
	assert.Equal(t, r.Free(), 4, "a refused batch posts nothing")
	n, err := r.PostReadable(hdr, [][]byte{{1}, {2, 2}, {3}, {4}, {5}})
	assert.NilError(t, err)
	assert.Equal(t, n, 4, "4 buffers")
	d := &device{r: r}
	for i := range 4 {
		id := binary.LittleEndian.Uint16(r.mem[r.Avail+4+2*i:])
		desc := r.mem[r.Desc+descSize*int(id):]
		length := binary.LittleEndian.Uint32(desc[8:])
		assert.Equal(t, binary.LittleEndian.Uint16(desc[12:]), uint16(0), "readable descriptor")
		buf := r.bufs[int(binary.LittleEndian.Uint64(desc[0:])-r.bufAddr):][:length]
		want := append([]byte{0xaa, 0xbb}, byte(i+1))
		if i == 1 {
			want = append(want, 2)
		}
		assert.DeepEqual(t, buf, want)
	}
	d.fill(t, 4, func() []byte { return nil })
	got, err := r.Collect(nil)
	assert.NilError(t, err)
	assert.Equal(t, got, 4)
	assert.Equal(t, r.Free(), 4)
}

func TestRingIndirect(t *testing.T) {
	r := newTestRing(t, 4, 64)
	r.indirect, r.indirectAddr = make([]byte, 4*indirectSize), 0x200000
	assert.Equal(t, r.PostWritable(2), 2)
	n, err := r.PostReadable(make([]byte, HdrLen), [][]byte{{1, 2, 3}})
	assert.NilError(t, err)
	assert.Equal(t, n, 1)
	type desc struct {
		Addr        uint64
		Len         uint32
		Flags, Next uint16
	}
	read := func(b []byte) desc {
		le := binary.LittleEndian
		return desc{le.Uint64(b), le.Uint32(b[8:]), le.Uint16(b[12:]), le.Uint16(b[14:])}
	}
	for i, want := range []struct {
		flags uint16
		rest  uint32
	}{{descFlagWrite, 64 - HdrLen}, {descFlagWrite, 64 - HdrLen}, {0, 3}} {
		id := binary.LittleEndian.Uint16(r.mem[r.Avail+4+2*i:])
		table := r.indirectAddr + uint64(indirectSize)*uint64(id)
		assert.DeepEqual(t, read(r.mem[r.Desc+descSize*int(id):]), desc{table, indirectSize, descFlagIndirect, 0})
		tb := r.indirect[indirectSize*int(id):]
		assert.DeepEqual(t, read(tb), desc{r.BufAddr(id), HdrLen, want.flags | descFlagNext, 1})
		assert.DeepEqual(t, read(tb[descSize:]), desc{r.BufAddr(id) + HdrLen, want.rest, want.flags, 0})
	}
}

func TestRingEventIdx(t *testing.T) {
	r := newTestRing(t, 8, 64)
	r.eventIdx = true
	setAvailEvent := func(v uint16) { binary.LittleEndian.PutUint16(r.mem[r.availEvent():], v) }
	// The device asks for a kick once avail->idx passes avail_event.
	setAvailEvent(0)
	assert.Equal(t, r.PostWritable(2), 2)
	assert.Check(t, r.NeedsKick(0), "0 → 2 passes avail_event 0")
	setAvailEvent(5)
	assert.Equal(t, r.PostWritable(2), 2)
	assert.Check(t, !r.NeedsKick(2), "2 → 4 does not pass avail_event 5")
	assert.Equal(t, r.PostWritable(2), 2)
	assert.Check(t, r.NeedsKick(4), "4 → 6 passes avail_event 5")
	// The flags are not looked at.
	binary.LittleEndian.PutUint16(r.mem[r.Used:], usedFlagNoNote)
	assert.Check(t, r.NeedsKick(4))

	// ArmCall asks for a signal at the next used entry to read.
	d := &device{r: r}
	d.fill(t, 3, func() []byte { return []byte{1} })
	_, err := r.Collect(nil)
	assert.NilError(t, err)
	assert.Check(t, !r.ArmCall(), "nothing pending")
	assert.Equal(t, binary.LittleEndian.Uint16(r.mem[r.usedEvent():]), uint16(3))
	d.fill(t, 1, func() []byte { return []byte{1} })
	assert.Check(t, r.ArmCall(), "one entry pending")
}

func TestMerger(t *testing.T) {
	hdr := func(k uint16) []byte {
		h := make([]byte, HdrLen)
		binary.LittleEndian.PutUint16(h[10:], k)
		return h
	}
	var m merger
	assert.Check(t, is.DeepEqual(m.add(append(hdr(1), 7)), append(hdr(1), 7)), "a frame in one buffer")
	assert.Check(t, is.Nil(m.add(append(hdr(3), 1))))
	assert.Check(t, is.Nil(m.add([]byte{2, 2})))
	assert.Check(t, is.DeepEqual(m.add([]byte{3}), append(hdr(3), 1, 2, 2, 3)), "a frame in three buffers")
	assert.NilError(t, m.err)
	assert.Check(t, is.Nil(m.add(hdr(0))))
	assert.ErrorContains(t, m.err, "num_buffers 0")
	var short merger
	short.add([]byte{1, 2})
	assert.ErrorContains(t, short.err, "less than the 12-byte header")
}
