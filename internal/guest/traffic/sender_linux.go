package traffic

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/guest/nopreempt"
	"github.com/xmitcheck/xmitcheck/internal/guest/profile"
)

// Batch is how many frames one sendmmsg(2) carries, as in the C reference
// sender (tapbench.c, see suites/tun/doc.go).
const Batch = 64

// Sender sends frames on one device through an AF_PACKET socket bound to
// it. The frames go through the device's qdisc (no PACKET_QDISC_BYPASS).
// It sends Batch frames per sendmmsg(2) from buffers and message headers
// built once, writing only the sequence numbers before each call.
type Sender struct {
	fd      int
	ifindex int
	stream  uint32
	next    uint64
	frames  []byte         // len(hdrs) frames back to back
	iovs    []unix.Iovec   // iovs[i] is frame i
	hdrs    []unix.Mmsghdr // hdrs[i] carries iovs[i]; no address: the socket is bound
	// nowait is set for a sender whose calls cannot sleep (NewSender).
	nowait  bool
	tooLong []byte // see deviceState
}

// Result counts what one Send call did.
type Result struct {
	// Sent frames were accepted by the kernel.
	Sent uint64
	// Refused frames got ENOBUFS: the kernel dropped them in
	// dev_queue_xmit. Which counter has them depends on where: the qdisc's
	// drops (NET_XMIT_DROP on enqueue), the device's tx_dropped (noqueue), or
	// none at all on 7.2+ when __dev_xmit_skb frees a burst beyond
	// net.core.qdisc_max_burst (SKB_DROP_REASON_QDISC_BURST_DROP).
	Refused uint64
}

// Handed is every frame handed to the kernel, accepted or refused: the
// left side of a ledger.
func (r Result) Handed() uint64 { return r.Sent + r.Refused }

// NewSender opens the socket; call it inside the device's namespace
// (netenv.Env.Do). stream tells senders apart in the payload. Its calls
// never sleep: the socket's send buffer is forced to 1 GiB (SO_SNDBUFFORCE;
// the kernel doubles it), and every frame a qdisc holds charges it with
// the frame's truesize (under 1 KiB for a FrameLen frame), so it would take
// a million frames parked at once to fill it, where the qdiscs here hold
// at most fq_codel's 10240 (the others, txqueuelen: 512 at most). Should
// it ever fill, the frame that finds it full fails Send with EAGAIN if it
// is the first of a sendmmsg(2), and is counted as refused after others.
func NewSender(ifindex int, stream uint32) (*Sender, error) {
	s, err := newSender(ifindex, stream, Batch, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 1<<30); err != nil {
			return fmt.Errorf("SO_SNDBUFFORCE: %w", err)
		}
		return nil
	})
	if s != nil {
		s.nowait = true
	}
	return s, err
}

// NewPacedSender opens a sender whose blocking socket has a send buffer of
// sndbuf bytes as SO_SNDBUF sets it (the kernel doubles it, with a floor;
// SendBuffer reads the result). Every frame the device has not yet taken
// (one that waits in a qdisc) is charged to that buffer, so once the qdisc
// holds a buffer's worth, sendmmsg(2) waits for room, at most wait
// (SO_SNDTIMEO) before a frame fails with EAGAIN. It sends one frame per
// call, so each frame's error is its own.
func NewPacedSender(ifindex int, stream uint32, sndbuf int, wait time.Duration) (*Sender, error) {
	return newSender(ifindex, stream, 1, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, sndbuf); err != nil {
			return fmt.Errorf("SO_SNDBUF: %w", err)
		}
		tv := unix.NsecToTimeval(wait.Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
			return fmt.Errorf("SO_SNDTIMEO: %w", err)
		}
		return nil
	})
}

// NewWaitingSender opens a sender that waits where a stopped queue pushes
// back, as pktgen does in seed 000's table: a blocking socket with the
// kernel's default send buffer, Batch frames per sendmmsg(2). Every frame
// a qdisc holds is charged to that buffer, so once the qdisc holds a
// buffer's worth (a few hundred FrameLen frames, far below any qdisc
// limit here) the call waits for the consumer; a stock tap never makes it
// wait (tun frees what it tail-drops). A wait longer than wait
// (SO_SNDTIMEO) fails Send with EAGAIN: a queue that stays stopped.
func NewWaitingSender(ifindex int, stream uint32, wait time.Duration) (*Sender, error) {
	return newSender(ifindex, stream, Batch, func(fd int) error {
		tv := unix.NsecToTimeval(wait.Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
			return fmt.Errorf("SO_SNDTIMEO: %w", err)
		}
		return nil
	})
}

func newSender(ifindex int, stream uint32, batch int, setup func(fd int) error) (*Sender, error) {
	defer profile.Running(profile.Setup).End()
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	if err := setup(fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: Htons(EtherType), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind AF_PACKET to ifindex %d: %w", ifindex, err)
	}
	s := &Sender{
		fd: fd, ifindex: ifindex, stream: stream,
		frames: make([]byte, batch*FrameLen),
		iovs:   make([]unix.Iovec, batch),
		hdrs:   make([]unix.Mmsghdr, batch),
	}
	for i := range s.hdrs {
		f := s.frames[i*FrameLen : (i+1)*FrameLen]
		putHeader(f, SourceMAC(stream), stream)
		s.iovs[i].Base = &f[0]
		s.iovs[i].SetLen(FrameLen)
		s.hdrs[i].Hdr.Iov = &s.iovs[i]
		s.hdrs[i].Hdr.SetIovlen(1)
	}
	return s, nil
}

// Stream is the stream number the sender puts in its frames.
func (s *Sender) Stream() uint32 { return s.stream }

// Next is the sequence number of the next frame Send sends; a sender
// starts at 0 and numbers every frame it tries, failed ones included.
func (s *Sender) Next() uint64 { return s.next }

// SendBuffer reads the socket's send buffer size back (SO_SNDBUF).
func (s *Sender) SendBuffer() (int, error) {
	return unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
}

// Send sends n frames with consecutive sequence numbers and counts what the
// kernel accepted and what it refused with ENOBUFS. EINTR (a signal while a
// paced sender waits for room) sends the frame again. Any other error stops
// it; the failed frame is not counted but keeps its sequence number.
//
// sendmmsg(2) reports the error of its first frame only: after a frame
// went, it returns how many went and drops the error of the frame that
// stopped it (net/socket.c, "We only return an error if no datagrams were
// able to be sent"). That frame either reached dev_queue_xmit and was
// dropped there, which is ENOBUFS, or never left packet_snd because the
// device was gone or down (ENXIO, ENETDOWN, or the ENETDOWN a link-down
// event left on the socket); deviceState tells which without sending. (A
// full send buffer cannot stop a NewSender, see there.)
func (s *Sender) Send(n int) (Result, error) {
	defer profile.Running(profile.Traffic).End()
	var r Result
	for n > 0 {
		m := min(n, len(s.hdrs))
		for i := range m {
			putSeq(s.frames[i*FrameLen:], s.next+uint64(i))
		}
		k, errno := s.sendmmsg(m)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.ENOBUFS:
			r.Refused++
			s.next++
			n--
			continue
		case errno != 0:
			s.next++
			return r, fmt.Errorf("sendmmsg ifindex %d, frame %d of stream %d: %w", s.ifindex, s.next-1, s.stream, errno)
		}
		r.Sent += uint64(k)
		s.next += uint64(k)
		n -= int(k)
		if int(k) == m {
			continue
		}
		s.next++
		n--
		if err := s.deviceState(); err != nil {
			return r, fmt.Errorf("sendmmsg ifindex %d, frame %d of stream %d (device state after a short sendmmsg): %w",
				s.ifindex, s.next-1, s.stream, err)
		}
		r.Refused++
	}
	return r, nil
}

// sendmmsg sends the first m frames. A call that cannot sleep goes as a
// raw system call (MSG_DONTWAIT, so that it cannot): through the runtime's
// blocking-call path its monitor thread wakes every 20 µs to look at a call
// that takes tens of microseconds (docs/design/tap-benchmark-reader.md). A
// call of several frames that may wait (NewWaitingSender) runs with the
// runtime's preemption signal blocked: a signal that broke its wait for
// room after a frame went would end it short, the frame that waited never
// sent, and Send would count that frame as refused.
func (s *Sender) sendmmsg(m int) (k uintptr, errno unix.Errno) {
	if s.nowait {
		k, _, errno = unix.RawSyscall6(unix.SYS_SENDMMSG,
			uintptr(s.fd), uintptr(unsafe.Pointer(&s.hdrs[0])), uintptr(m), unix.MSG_DONTWAIT, 0, 0)
		return k, errno
	}
	call := func() error {
		k, _, errno = unix.Syscall6(unix.SYS_SENDMMSG,
			uintptr(s.fd), uintptr(unsafe.Pointer(&s.hdrs[0])), uintptr(m), 0, 0, 0)
		return nil
	}
	if len(s.hdrs) == 1 {
		call()
		return k, errno
	}
	if err := nopreempt.Do(call); err != nil {
		// Blocking SIGURG failed (pthread_sigmask's errno): no frame went.
		errors.As(err, &errno)
		return 0, errno
	}
	return k, errno
}

// deviceState asks packet_snd whether the device is there and up, without
// sending anything: a message longer than the device's MTU allows fails
// with ENXIO (no device) or ENETDOWN (down) if either holds, else with
// EMSGSIZE before any buffer is allocated or any socket error consumed
// (net/packet/af_packet.c). It returns nil for EMSGSIZE.
//
// It cannot see a device that went down and came back up between the frame
// it explains and the probe (microseconds; a link takes a netlink request
// to come up): that frame is then counted as refused.
func (s *Sender) deviceState() error {
	if s.tooLong == nil {
		// Longer than any MTU (65535) plus the link header and a VLAN tag.
		s.tooLong = make([]byte, 1<<17)
	}
	err := unix.Send(s.fd, s.tooLong, 0)
	if errors.Is(err, unix.EMSGSIZE) {
		return nil
	}
	if err == nil {
		return errors.New("a message longer than any MTU was sent")
	}
	return err
}

// Close closes the socket.
func (s *Sender) Close() error { return unix.Close(s.fd) }

// Htons is v in network byte order, as AF_PACKET's protocol numbers (in
// socket(2) and sockaddr_ll) want it on a little-endian machine.
func Htons(v uint16) uint16 { return v<<8 | v>>8 }
