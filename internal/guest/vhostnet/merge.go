package vhostnet

import (
	"encoding/binary"
	"fmt"
)

// merger puts together the frames vhost spreads over several receive
// buffers with VIRTIO_NET_F_MRG_RXBUF: a frame's first buffer starts with
// struct virtio_net_hdr_mrg_rxbuf, whose num_buffers (bytes 10-11, little
// endian with VIRTIO_F_VERSION_1) counts the used entries the frame takes,
// and the others follow it in the used ring.
type merger struct {
	frame []byte // the frame so far, header included
	left  int    // buffers still to come
	err   error  // the first malformed buffer
}

// add takes the bytes of one used buffer and returns the whole frame when
// this buffer completes it (valid until the next call), else nil.
func (m *merger) add(b []byte) []byte {
	if m.err != nil {
		return nil
	}
	if m.left == 0 {
		if len(b) < HdrLen {
			m.err = fmt.Errorf("vhost: a frame's first buffer holds %d bytes, less than the %d-byte header", len(b), HdrLen)
			return nil
		}
		k := int(binary.LittleEndian.Uint16(b[10:12]))
		if k == 0 {
			m.err = fmt.Errorf("vhost: num_buffers 0 in header % x", b[:HdrLen])
			return nil
		}
		m.frame, m.left = append(m.frame[:0], b...), k
	} else {
		m.frame = append(m.frame, b...)
	}
	m.left--
	if m.left > 0 {
		return nil
	}
	return m.frame
}
