package vhostnet

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Split virtqueue constants (include/uapi/linux/virtio_ring.h).
const (
	descFlagNext     = 1 // VRING_DESC_F_NEXT: the chain goes on in desc.next
	descFlagWrite    = 2 // VRING_DESC_F_WRITE: the device writes the buffer
	descFlagIndirect = 4 // VRING_DESC_F_INDIRECT: the buffer is a table of descriptors
	usedFlagNoNote   = 1 // VRING_USED_F_NO_NOTIFY: the device needs no kick
	ringAlign        = 4096
	descSize         = 16 // struct vring_desc
	usedElemSize     = 8  // struct vring_used_elem
	// indirectSize is the table each buffer has when it is posted through
	// an indirect descriptor: two descriptors, the virtio-net header and the
	// rest of the buffer.
	indirectSize = 2 * descSize
)

// Layout says where the three parts of a split virtqueue of Num entries sit,
// in bytes from the ring's start, the legacy way (vring_init with a 4096-byte
// alignment): descriptor table, then the avail ring, then the used ring on
// the next page.
//
//	struct vring_desc { __le64 addr; __le32 len; __le16 flags; __le16 next; };
//	struct vring_avail { __le16 flags; __le16 idx; __le16 ring[num]; __le16 used_event; };
//	struct vring_used_elem { __le32 id; __le32 len; };
//	struct vring_used { __le16 flags; __le16 idx; struct vring_used_elem ring[num]; __le16 avail_event; };
type Layout struct {
	Num               int
	Desc, Avail, Used int
	// Size is vring_size(num, 4096): the bytes the ring needs.
	Size int
}

// NewLayout lays out a ring of num entries; num must be a power of two
// between 1 and 32768 (the virtio limit).
func NewLayout(num int) (Layout, error) {
	if num < 1 || num > 32768 || num&(num-1) != 0 {
		return Layout{}, fmt.Errorf("vhost: queue size %d is not a power of two in [1, 32768]", num)
	}
	avail := descSize * num
	used := alignUp(avail+2*(3+num), ringAlign)
	return Layout{Num: num, Desc: 0, Avail: avail, Used: used, Size: used + 2*3 + usedElemSize*num}, nil
}

func alignUp(n, a int) int { return (n + a - 1) &^ (a - 1) }

// memSize is how many bytes a Ring's memory spans: Size rounded up to 4, so
// that the 16-bit avail_event at the very end can be read as a 32-bit word.
func (l Layout) memSize() int { return alignUp(l.Size, 4) }

// usedEvent and availEvent are the offsets of the two event indexes of
// VIRTIO_RING_F_EVENT_IDX: used_event after the avail ring (written by the
// driver), avail_event after the used ring (written by the device).
func (l Layout) usedEvent() int  { return l.Avail + 4 + 2*l.Num }
func (l Layout) availEvent() int { return l.Used + 4 + usedElemSize*l.Num }

// Ring is the driver (guest) side of one split virtqueue whose receive
// buffers are equal slices of one buffer area. The device side is the
// kernel: it reads the descriptor table and avail ring and writes the used
// ring concurrently, so the avail and used indexes are accessed atomically.
// A Ring is not safe for concurrent use by several goroutines.
type Ring struct {
	Layout
	mem     []byte // the ring itself, Layout.Size bytes
	bufs    []byte // Num buffers of bufSize bytes
	bufSize int
	bufAddr uint64 // guest address of bufs[0]

	next   uint16   // shadow of avail->idx: the next avail slot
	last   uint16   // the next used slot to read
	free   []uint16 // descriptor ids the driver owns
	posted []bool   // posted[id]: the device owns descriptor id

	// eventIdx: VIRTIO_RING_F_EVENT_IDX was negotiated (see NeedsKick,
	// ArmCall).
	eventIdx bool
	// indirect, when set, holds one table of indirectSize bytes per
	// descriptor id at guest address indirectAddr, and every buffer is
	// posted through it (VIRTIO_RING_F_INDIRECT_DESC).
	indirect     []byte
	indirectAddr uint64
}

// newRing places a ring in mem (at least l.memSize() bytes) with receive
// buffers in bufs (at least l.Num*bufSize bytes) whose guest address is
// bufAddr.
func newRing(l Layout, mem, bufs []byte, bufSize int, bufAddr uint64) (*Ring, error) {
	if len(mem) < l.memSize() || len(bufs) < l.Num*bufSize {
		return nil, fmt.Errorf("vhost: ring needs %d+%d bytes, have %d+%d", l.memSize(), l.Num*bufSize, len(mem), len(bufs))
	}
	r := &Ring{
		Layout:  l,
		mem:     mem[:l.memSize()],
		bufs:    bufs[:l.Num*bufSize],
		bufSize: bufSize,
		bufAddr: bufAddr,
		posted:  make([]bool, l.Num),
	}
	for id := l.Num - 1; id >= 0; id-- {
		r.free = append(r.free, uint16(id))
	}
	return r, nil
}

// Free returns how many descriptors the driver may still post.
func (r *Ring) Free() int { return len(r.free) }

// Posted returns how many buffers the device holds (posted, not yet used).
func (r *Ring) Posted() int { return r.Num - len(r.free) }

// BufAddr returns the guest address of descriptor id's buffer.
func (r *Ring) BufAddr(id uint16) uint64 { return r.bufAddr + uint64(id)*uint64(r.bufSize) }

// PostWritable posts up to n empty buffers for the device to fill and
// publishes them with one avail->idx store. It returns how many it posted.
func (r *Ring) PostWritable(n int) int {
	n = min(n, len(r.free))
	for range n {
		id := r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
		r.posted[id] = true
		r.writeBuf(id, uint32(r.bufSize), HdrLen, descFlagWrite)
		binary.LittleEndian.PutUint16(r.mem[r.Avail+4+2*(int(r.next)%r.Num):], id)
		r.next++
	}
	if n > 0 {
		r.publishAvail()
	}
	return n
}

// PostReadable copies frames into free buffers, each behind hdr, for the
// device to read (a transmit queue) and publishes them with one avail->idx
// store. It returns how many frames it posted: fewer when buffers run out.
// A frame that does not fit a buffer is an error and posts nothing.
func (r *Ring) PostReadable(hdr []byte, frames [][]byte) (int, error) {
	for _, f := range frames {
		if size := len(hdr) + len(f); size > r.bufSize {
			return 0, fmt.Errorf("vhost: a %d-byte frame and header do not fit a %d-byte buffer", size, r.bufSize)
		}
	}
	n := min(len(frames), len(r.free))
	for i := range n {
		size := len(hdr) + len(frames[i])
		id := r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
		r.posted[id] = true
		off := int(id) * r.bufSize
		copy(r.bufs[off:], hdr)
		copy(r.bufs[off+len(hdr):], frames[i])
		r.writeBuf(id, uint32(size), len(hdr), 0)
		binary.LittleEndian.PutUint16(r.mem[r.Avail+4+2*(int(r.next)%r.Num):], id)
		r.next++
	}
	if n > 0 {
		r.publishAvail()
	}
	return n, nil
}

// writeBuf points descriptor id at its buffer's first length bytes, with
// flags (descFlagWrite or 0): directly, or through the descriptor's indirect
// table as two descriptors split after hdrLen bytes (the virtio-net header,
// then the rest).
func (r *Ring) writeBuf(id uint16, length uint32, hdrLen int, flags uint16) {
	d := r.mem[r.Desc+descSize*int(id):]
	if r.indirect == nil {
		writeDesc(d, r.BufAddr(id), length, flags, 0)
		return
	}
	t := r.indirect[indirectSize*int(id):]
	writeDesc(t, r.BufAddr(id), uint32(hdrLen), flags|descFlagNext, 1)
	writeDesc(t[descSize:], r.BufAddr(id)+uint64(hdrLen), length-uint32(hdrLen), flags, 0)
	writeDesc(d, r.indirectAddr+uint64(indirectSize*int(id)), indirectSize, descFlagIndirect, 0)
}

// writeDesc fills the struct vring_desc at d.
func writeDesc(d []byte, addr uint64, length uint32, flags, next uint16) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint32(d[8:], length)
	binary.LittleEndian.PutUint16(d[12:], flags)
	binary.LittleEndian.PutUint16(d[14:], next)
}

// publishAvail stores avail->idx. Go has no 16-bit atomics, so the store
// covers the 32-bit word {flags, idx}: the driver is the only writer of
// both. The atomic store orders the descriptor and ring writes before it
// (the virtio_wmb() of a C driver).
func (r *Ring) publishAvail() {
	atomic.StoreUint32(r.word(r.Avail), uint32(r.next)<<16)
}

// usedWord loads the 32-bit word {used->flags, used->idx} the device writes.
func (r *Ring) usedWord() (flags, idx uint16) {
	w := atomic.LoadUint32(r.word(r.Used))
	return uint16(w), uint16(w >> 16)
}

// word points at a 4-byte aligned little-endian word of the ring.
func (r *Ring) word(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// NeedsKick reports whether the device asked to be notified of the buffers
// published since avail index old: with VIRTIO_RING_F_EVENT_IDX when the
// published range passed avail_event (vring_need_event), else when
// VRING_USED_F_NO_NOTIFY is clear.
func (r *Ring) NeedsKick(old uint16) bool {
	if r.eventIdx {
		event := uint16(atomic.LoadUint32(r.word(r.availEvent())))
		return needEvent(event, r.next, old)
	}
	flags, _ := r.usedWord()
	return flags&usedFlagNoNote == 0
}

// needEvent is vring_need_event (include/uapi/linux/virtio_ring.h): whether
// moving an index from old to next passed event.
func needEvent(event, next, old uint16) bool { return next-event-1 < next-old }

// ArmCall asks the device, with VIRTIO_RING_F_EVENT_IDX, to signal the next
// used entry the driver has not read (used_event); without it the device
// signals every time it uses buffers. It reports whether entries are
// already pending, in which case no signal may come for them.
func (r *Ring) ArmCall() bool {
	if r.eventIdx {
		// used_event is followed by padding up to the used ring, so the
		// store covers it with a 32-bit word; the atomic store is also the
		// barrier between the store and the load of used->idx below.
		atomic.StoreUint32(r.word(r.usedEvent()), uint32(r.last))
	}
	return r.Pending() > 0
}

// Pending returns how many used entries the device has published that the
// driver has not read yet.
func (r *Ring) Pending() int {
	_, idx := r.usedWord()
	return int(idx - r.last)
}

// Collect reads every used entry the device has published, calls fn with
// the bytes the device wrote into that buffer (fn must not keep them), and
// takes the descriptor back. It returns how many entries it read; an entry
// the driver never posted, or a length beyond the buffer, is an error.
func (r *Ring) Collect(fn func(data []byte)) (int, error) {
	_, idx := r.usedWord()
	n := 0
	for r.last != idx {
		e := r.mem[r.Used+4+usedElemSize*(int(r.last)%r.Num):]
		id := binary.LittleEndian.Uint32(e[0:])
		length := binary.LittleEndian.Uint32(e[4:])
		if id >= uint32(r.Num) || !r.posted[id] || int(length) > r.bufSize {
			return n, fmt.Errorf("vhost: used entry %d has id %d len %d, not a posted buffer (queue size %d, buffer %d bytes)",
				r.last, id, length, r.Num, r.bufSize)
		}
		if fn != nil {
			off := int(id) * r.bufSize
			fn(r.bufs[off : off+int(length)])
		}
		r.posted[id] = false
		r.free = append(r.free, uint16(id))
		r.last++
		n++
	}
	return n, nil
}
