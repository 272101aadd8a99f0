// Package traffic builds sequence-numbered Ethernet frames and sends them
// through AF_PACKET sockets, so every frame a test sends passes the qdisc
// and the device's ndo_start_xmit and can be counted and identified at the
// other end. It makes no assertions.
package traffic

import (
	"encoding/binary"
	"errors"
)

// EtherType is IEEE 802 local experimental ethertype 1: no protocol in the
// kernel handles it, so frames are neither answered nor forwarded.
const EtherType = 0x88B5

// FrameLen is the length of every frame (the Ethernet minimum without FCS).
const FrameLen = 60

// magic marks xmitcheck frames in the payload.
const magic = 0x786d6974 // "xmit"

// Frame returns a broadcast frame from src carrying seq and stream.
//
//	dst(6) src(6) ethertype(2) magic(4) stream(4) seq(8) zero padding
func Frame(src [6]byte, stream uint32, seq uint64) []byte {
	b := make([]byte, FrameLen)
	putHeader(b, src, stream)
	putSeq(b, seq)
	return b
}

// putHeader writes everything of a frame but its sequence number into b,
// which is FrameLen long and zero.
func putHeader(b []byte, src [6]byte, stream uint32) {
	copy(b[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:14], EtherType)
	binary.BigEndian.PutUint32(b[14:18], magic)
	binary.BigEndian.PutUint32(b[18:22], stream)
}

// putSeq writes the sequence number of the frame in b.
func putSeq(b []byte, seq uint64) { binary.BigEndian.PutUint64(b[22:30], seq) }

// SourceMAC is the locally administered source address a Sender of stream
// puts in its frames.
func SourceMAC(stream uint32) [6]byte {
	return [6]byte{0x02, 0x78, 0x6d, 0, byte(stream >> 8), byte(stream)}
}

// ErrNotOurs is returned by Parse for a frame xmitcheck did not build.
var ErrNotOurs = errors.New("not an xmitcheck frame")

// Parse returns the stream and sequence number of a frame built by Frame.
func Parse(b []byte) (stream uint32, seq uint64, err error) {
	if len(b) < 30 || binary.BigEndian.Uint16(b[12:14]) != EtherType || binary.BigEndian.Uint32(b[14:18]) != magic {
		return 0, 0, ErrNotOurs
	}
	return binary.BigEndian.Uint32(b[18:22]), binary.BigEndian.Uint64(b[22:30]), nil
}
