// Package tuntap opens tun/tap devices through /dev/net/tun and wraps the
// TUN* ioctls the suites need, so tests talk to the kernel's UAPI directly
// instead of through ip-tuntap. It also decodes what a queue file's reads
// carry before the packet: tun's packet information and the virtio-net
// header.
package tuntap

import (
	"encoding/binary"
	"fmt"
)

// Flags of TUNSETIFF (include/uapi/linux/if_tun.h).
const (
	IFFTun          = 0x0001
	IFFTap          = 0x0002
	IFFNapi         = 0x0010
	IFFNapiFrags    = 0x0020
	IFFNoCarrier    = 0x0040
	IFFBackpressure = 0x0080 // Linux 7.3: stop the queue when the ring is full (seed 000)
	IFFNoPI         = 0x1000
	IFFOneQueue     = 0x2000
	IFFVnetHdr      = 0x4000
	IFFTunExcl      = 0x8000
	IFFMultiQueue   = 0x0100
	IFFAttachQueue  = 0x0200
	IFFDetachQueue  = 0x0400
	IFFPersist      = 0x0800
)

// Offloads of TUNSETOFFLOAD (include/uapi/linux/if_tun.h): what the reader
// of the device can take, so the stack may hand the device packets that
// still need them.
const (
	TunFCsum   = 0x01 // unchecksummed packets (NETIF_F_HW_CSUM)
	TunFTSO4   = 0x02 // TCP segmentation, IPv4 (NETIF_F_TSO; needs TunFCsum)
	TunFTSO6   = 0x04
	TunFTSOECN = 0x08
	TunFUFO    = 0x10
	TunFUSO4   = 0x20
	TunFUSO6   = 0x40
)

// PILen is the length of the packet information a tun device without
// IFF_NO_PI puts before every packet:
//
//	struct tun_pi { __u16 flags; __be16 proto; };
const PILen = 4

// PI is a decoded struct tun_pi.
type PI struct {
	Flags uint16 // TUN_PKT_STRIP (0x0001) when the packet did not fit the read
	Proto uint16 // the packet's skb->protocol, an EtherType
}

// ParsePI splits a read of a tun device without IFF_NO_PI into its packet
// information and the packet.
func ParsePI(b []byte) (PI, []byte, error) {
	if len(b) < PILen {
		return PI{}, nil, fmt.Errorf("tun_pi: %d bytes, want at least %d", len(b), PILen)
	}
	// flags is host-endian in the kernel (__u16), proto big-endian.
	return PI{Flags: binary.NativeEndian.Uint16(b[0:2]), Proto: binary.BigEndian.Uint16(b[2:4])}, b[PILen:], nil
}

// VnetHdrLen is the length of struct virtio_net_hdr, the header a device
// with IFF_VNET_HDR puts before every packet (TUNSETVNETHDRSZ can make it
// longer) and an AF_PACKET socket with PACKET_VNET_HDR takes before every
// packet it sends (include/uapi/linux/virtio_net.h):
//
//	struct virtio_net_hdr {
//		__u8 flags;             // VIRTIO_NET_HDR_F_*
//		__u8 gso_type;          // VIRTIO_NET_HDR_GSO_*
//		__virtio16 hdr_len;     // Ethernet + IP + tcp/udp hdrs
//		__virtio16 gso_size;    // bytes to append to hdr_len per frame
//		__virtio16 csum_start;  // position to start checksumming from
//		__virtio16 csum_offset; // offset after that to place checksum
//	};
//
// __virtio16 is little-endian here: tun (without TUNSETVNETBE) and AF_PACKET
// use the legacy virtio byte order, which is the machine's, and the suites
// run on little-endian machines.
const VnetHdrLen = 10

// Values of virtio_net_hdr's flags and gso_type.
const (
	VnetHdrFNeedsCsum = 1 // csum_start and csum_offset say where the checksum goes
	VnetHdrFDataValid = 2 // the checksum was checked
	VnetHdrGSONone    = 0
	VnetHdrGSOTCPv4   = 1
	VnetHdrGSOUDP     = 3
	VnetHdrGSOTCPv6   = 4
	VnetHdrGSOUDPL4   = 5
)

// VnetHdr is a decoded struct virtio_net_hdr.
type VnetHdr struct {
	Flags, GSOType                         uint8
	HdrLen, GSOSize, CsumStart, CsumOffset uint16
}

func (h VnetHdr) String() string {
	return fmt.Sprintf("flags %#x gso_type %d hdr_len %d gso_size %d csum_start %d csum_offset %d",
		h.Flags, h.GSOType, h.HdrLen, h.GSOSize, h.CsumStart, h.CsumOffset)
}

// ParseVnetHdr splits a read of a device with IFF_VNET_HDR and a header of
// size bytes (VnetHdrLen unless TUNSETVNETHDRSZ changed it) into the header
// and the packet.
func ParseVnetHdr(b []byte, size int) (VnetHdr, []byte, error) {
	if size < VnetHdrLen || len(b) < size {
		return VnetHdr{}, nil, fmt.Errorf("virtio_net_hdr: %d bytes, want at least %d (header size %d)",
			len(b), max(size, VnetHdrLen), size)
	}
	le := binary.LittleEndian
	h := VnetHdr{
		Flags: b[0], GSOType: b[1],
		HdrLen: le.Uint16(b[2:4]), GSOSize: le.Uint16(b[4:6]), CsumStart: le.Uint16(b[6:8]), CsumOffset: le.Uint16(b[8:10]),
	}
	return h, b[size:], nil
}

// Append appends h in its wire form to b.
func (h VnetHdr) Append(b []byte) []byte {
	le := binary.LittleEndian
	b = append(b, h.Flags, h.GSOType)
	b = le.AppendUint16(b, h.HdrLen)
	b = le.AppendUint16(b, h.GSOSize)
	b = le.AppendUint16(b, h.CsumStart)
	return le.AppendUint16(b, h.CsumOffset)
}
