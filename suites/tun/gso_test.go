package tun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/xmitcheck/xmitcheck/internal/guest/traffic"
	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
)

// Headers of the TCP/IPv4 packets a gsoSender sends, without options.
const (
	ethLen  = 14
	ipLen   = 20
	tcpLen  = 20
	hdrsLen = ethLen + ipLen + tcpLen
)

// gsoSender sends TCP/IPv4 packets of k traffic frames each through an
// AF_PACKET socket with PACKET_VNET_HDR, each behind a virtio_net_hdr that
// asks for TCP segmentation with one frame per segment (gso_type TCPV4,
// gso_size traffic.FrameLen, checksum left to the device): what a guest's
// virtio-net driver hands its VMM, which writes it to a tap of its own,
// and the stack then forwards. The kernel marks such a packet
// SKB_GSO_DODGY; after the qdisc, validate_xmit_skb hands it whole to a
// device that offers TSO (tcp_gso_segment only checks its headers) and
// segments it for one that does not.
type gsoSender struct {
	fd      int
	ifindex int
	stream  uint32
	k       int
	next    uint64 // the number of the next frame
	pkt     []byte
}

func (rig *tapRig) gsoSender(t testing.TB, stream uint32, k int) *gsoSender {
	t.Helper()
	s := &gsoSender{ifindex: rig.ifindex, stream: stream, k: k}
	assert.NilError(t, rig.e.Do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		s.fd = fd
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return fmt.Errorf("PACKET_VNET_HDR: %w", err)
		}
		// Frames parked in the qdisc must never block the sender.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 64<<20); err != nil {
			return fmt.Errorf("SO_SNDBUFFORCE: %w", err)
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: traffic.Htons(unix.ETH_P_IP), Ifindex: rig.ifindex})
	}), "GSO sender on %s", tapName)
	t.Cleanup(func() { unix.Close(s.fd) })
	return s
}

// Send sends n packets and counts them, not their frames: Refused ones got
// ENOBUFS (dropped whole by the qdisc).
func (s *gsoSender) Send(n int) (traffic.Result, error) {
	var r traffic.Result
	for range n {
		s.pkt = s.packet(s.pkt[:0])
		s.next += uint64(s.k)
		_, err := unix.Write(s.fd, s.pkt)
		switch {
		case errors.Is(err, unix.ENOBUFS):
			r.Refused++
		case err != nil:
			return r, fmt.Errorf("send GSO packet ifindex %d, frames %d-%d of stream %d: %w",
				s.ifindex, s.next-uint64(s.k), s.next-1, s.stream, err)
		default:
			r.Sent++
		}
	}
	return r, nil
}

// packet appends the next packet to b: virtio_net_hdr, Ethernet, IPv4,
// TCP, then frames s.next to s.next+k-1.
func (s *gsoSender) packet(b []byte) []byte {
	payload := s.k * traffic.FrameLen
	b = tuntap.VnetHdr{
		Flags: tuntap.VnetHdrFNeedsCsum, GSOType: tuntap.VnetHdrGSOTCPv4, HdrLen: hdrsLen,
		GSOSize: traffic.FrameLen, CsumStart: ethLen + ipLen, CsumOffset: 16,
	}.Append(b)
	be := binary.BigEndian
	src := traffic.SourceMAC(s.stream)
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	b = append(b, src[:]...)
	b = be.AppendUint16(b, unix.ETH_P_IP)

	saddr, daddr := [4]byte{10, 99, 0, 1}, [4]byte{10, 99, 0, 2}
	ip := len(b)
	b = append(b, 0x45, 0)
	b = be.AppendUint16(b, uint16(ipLen+tcpLen+payload))
	b = append(b, 0, 0, 0x40, 0, 64, unix.IPPROTO_TCP, 0, 0) // id 0, DF, ttl 64, checksum below
	b = append(b, saddr[:]...)
	b = append(b, daddr[:]...)
	be.PutUint16(b[ip+10:], ^fold(sum16(b[ip:ip+ipLen])))

	b = be.AppendUint16(b, 40000+uint16(s.stream))
	b = be.AppendUint16(b, 9) // discard
	b = be.AppendUint32(b, uint32(s.next)*traffic.FrameLen)
	b = be.AppendUint32(b, 0)
	b = append(b, 5<<4, 0x18) // data offset 5 words; PSH|ACK
	b = be.AppendUint16(b, 0xffff)
	// CHECKSUM_PARTIAL: the field holds the pseudo-header's sum, the
	// device (here the stack, segmenting) adds the rest.
	pseudo := sum16(saddr[:]) + sum16(daddr[:]) + unix.IPPROTO_TCP + uint32(tcpLen+payload)
	b = be.AppendUint16(b, fold(pseudo))
	b = be.AppendUint16(b, 0)
	for i := range s.k {
		b = append(b, traffic.Frame(src, s.stream, s.next+uint64(i))...)
	}
	return b
}

// Stream and Next tell sentBy's callers what s numbered.
func (s *gsoSender) Stream() uint32 { return s.stream }
func (s *gsoSender) Next() uint64   { return s.next }

// sum16 is the ones'-complement sum of b's 16-bit words, not folded.
func sum16(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// unwrapTCP returns the unwrapFunc for a tap with IFF_VNET_HDR whose reads
// carry a gsoSender's packets: a virtio_net_hdr, then Ethernet, IPv4 and
// TCP headers, then frames. With tso each read is a whole packet, its
// header asking for TCPV4 segmentation at one frame per segment; without,
// each read is one segment of one frame and its header asks for none.
func unwrapTCP(tso bool) unwrapFunc {
	return func(entry []byte) ([][]byte, error) {
		h, pkt, err := tuntap.ParseVnetHdr(entry, tuntap.VnetHdrLen)
		if err != nil {
			return nil, err
		}
		if tso && (h.GSOType != tuntap.VnetHdrGSOTCPv4 || h.GSOSize != traffic.FrameLen) {
			return nil, fmt.Errorf("virtio_net_hdr %v, want gso_type TCPV4 with gso_size %d: a whole packet",
				h, traffic.FrameLen)
		}
		if !tso && h.GSOType != tuntap.VnetHdrGSONone {
			return nil, fmt.Errorf("virtio_net_hdr %v: a packet still to be segmented reached a tap that does not take them", h)
		}
		tcpIPv4 := len(pkt) >= hdrsLen && binary.BigEndian.Uint16(pkt[12:14]) == unix.ETH_P_IP &&
			pkt[ethLen]>>4 == 4 && pkt[ethLen+9] == unix.IPPROTO_TCP
		if !tcpIPv4 {
			return nil, fmt.Errorf("not a TCP/IPv4 packet (%d bytes, virtio_net_hdr %v)", len(pkt), h)
		}
		tcp := ethLen + int(pkt[ethLen]&0xf)*4
		if len(pkt) < tcp+tcpLen {
			return nil, fmt.Errorf("TCP/IPv4 packet of %d bytes cut in its headers", len(pkt))
		}
		payload := pkt[tcp+int(pkt[tcp+12]>>4)*4:]
		if len(payload) == 0 || len(payload)%traffic.FrameLen != 0 || !tso && len(payload) != traffic.FrameLen {
			return nil, fmt.Errorf("TCP payload of %d bytes (virtio_net_hdr %v): want one frame of %d per segment",
				len(payload), h, traffic.FrameLen)
		}
		var frames [][]byte
		for len(payload) > 0 {
			frames = append(frames, payload[:traffic.FrameLen])
			payload = payload[traffic.FrameLen:]
		}
		return frames, nil
	}
}
