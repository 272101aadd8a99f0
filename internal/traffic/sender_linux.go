package traffic

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Sender sends frames on one device through an AF_PACKET socket. The frames
// go through the device's qdisc (no PACKET_QDISC_BYPASS).
type Sender struct {
	fd      int
	ifindex int
	src     [6]byte
	stream  uint32
	next    uint64
}

// Result counts what one Send call did.
type Result struct {
	// Sent frames were accepted by the kernel.
	Sent uint64
	// Refused frames got ENOBUFS: the kernel dropped them in
	// dev_queue_xmit. Which counter has them depends on where: the qdisc's
	// drops (NET_XMIT_DROP on enqueue), the device's tx_dropped (noqueue), or
	// none at all on 7.2+ when __dev_xmit_skb frees a burst beyond
	// net.core.qdisc_max_burst (SKB_DROP_REASON_QDISC_BURST_DROP). A test's
	// total sent is Sent + Refused.
	Refused uint64
}

// NewSender opens the socket; call it inside the device's namespace
// (netenv.Env.Do). stream tells senders apart in the payload. The socket's
// send buffer is forced large (SO_SNDBUFFORCE) so that frames parked in a
// qdisc never block the sender.
func NewSender(ifindex int, stream uint32) (*Sender, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 64<<20); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("SO_SNDBUFFORCE: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(EtherType), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind AF_PACKET to ifindex %d: %w", ifindex, err)
	}
	return &Sender{fd: fd, ifindex: ifindex, stream: stream, src: SourceMAC(stream)}, nil
}

// Send sends n frames with consecutive sequence numbers, one sendto each,
// and counts what the kernel accepted and what the qdisc refused. Any other
// error stops it.
func (s *Sender) Send(n int) (Result, error) {
	var r Result
	to := &unix.SockaddrLinklayer{Protocol: htons(EtherType), Ifindex: s.ifindex, Halen: 6, Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for range n {
		f := Frame(s.src, s.stream, s.next)
		s.next++
		err := unix.Sendto(s.fd, f, 0, to)
		switch {
		case err == nil:
			r.Sent++
		case errors.Is(err, unix.ENOBUFS):
			r.Refused++
		default:
			return r, fmt.Errorf("sendto ifindex %d: %w", s.ifindex, err)
		}
	}
	return r, nil
}

// Close closes the socket.
func (s *Sender) Close() error { return unix.Close(s.fd) }

func htons(v uint16) uint16 { return v<<8 | v>>8 }
