package vmpath

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xmitcheck/xmitcheck/internal/guest/tuntap"
	"github.com/xmitcheck/xmitcheck/internal/guest/vhostnet"
)

const (
	// frameBuf holds any packet a tap gives: a 64 KiB GSO packet, its
	// Ethernet and virtio-net headers.
	frameBuf = 1 << 17
	// callWait is how long the vhost-net forwarder waits for vhost's call
	// before it looks at stop again.
	callWait = 10 * time.Millisecond
	// txLimit bounds the wait for a TX buffer of the vhost-net device to
	// come free: vhost sends what it holds within microseconds.
	txLimit = 5 * time.Second
)

// readHost is the Read consumer's forwarder into the VM: each frame
// read(2) from HostTap's queue file is written into GuestTap, with its
// virtio-net header where both taps have one (Config.Offload).
func (p *Path) readHost() error {
	return p.copyFrames(int(p.host.Fd()), int(p.guest.Fd()), HostTap, GuestTap)
}

// readGuest is the forwarder out of the VM, for the Read consumer: each
// frame read from GuestTap is written into HostTap's queue file.
func (p *Path) readGuest() error {
	return p.copyFrames(int(p.guest.Fd()), int(p.host.Fd()), GuestTap, HostTap)
}

// copyFrames reads frames from the tap file src with blocking read(2)s
// and writes each into dst, until an error. The files are used through
// their descriptors: os.File's Close would wait for a read blocked in the
// kernel, and the teardown closes them only once this has returned.
func (p *Path) copyFrames(src, dst int, from, to string) error {
	buf := make([]byte, frameBuf)
	for {
		n, err := readFrame(src, buf)
		if err != nil {
			return p.forwardErr("read "+from, err)
		}
		if _, err := unix.Write(dst, buf[:n]); err != nil {
			return p.forwardErr(fmt.Sprintf("write a %d-byte frame into %s", n, to), err)
		}
	}
}

// readFrame reads one frame from the blocking tap file fd, again when a
// signal interrupted the read.
func readFrame(fd int, buf []byte) (int, error) {
	for {
		n, err := unix.Read(fd, buf)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// receive is the VhostNet consumer's forwarder into the VM: it keeps
// every RX buffer posted, and writes each packet vhost-net put in them
// into GuestTap: with its virtio-net header where GuestTap has one
// (Config.Offload), else without it.
func (p *Path) receive() error {
	guest := int(p.guest.Fd())
	var werr error
	write := func(b []byte) {
		if werr != nil {
			return
		}
		if !p.cfg.Offload {
			b, werr = finished(b)
		}
		if werr == nil {
			_, werr = unix.Write(guest, b)
		}
	}
	for !p.stop.Load() {
		if _, err := p.vm.Post(p.vm.RX.Free()); err != nil {
			return p.forwardErr("post RX buffers", err)
		}
		n, err := p.vm.Receive(write)
		if err == nil {
			err = werr
		}
		if err != nil {
			return p.forwardErr("receive into "+GuestTap, err)
		}
		if n > 0 {
			continue
		}
		if _, err := p.vm.WaitCall(callWait); err != nil {
			return p.forwardErr("wait for vhost's call", err)
		}
	}
	return nil
}

// transmit is the VhostNet consumer's forwarder out of the VM: each frame
// read from GuestTap goes out through the vhost-net device's TX virtqueue,
// which vhost sends into HostTap's queue (tun_sendmsg), as a VM's virtio-net
// driver sends it.
func (p *Path) transmit() error {
	guest := int(p.guest.Fd())
	buf := make([]byte, frameBuf)
	frames := [][]byte{nil}
	for {
		n, err := readFrame(guest, buf)
		if err != nil {
			return p.forwardErr("read "+GuestTap, err)
		}
		frames[0] = buf[:n]
		if p.cfg.Offload {
			frames[0], err = finished(frames[0])
		}
		if err == nil {
			err = p.post(frames)
		}
		if err != nil {
			return p.forwardErr(fmt.Sprintf("transmit a %d-byte frame", n), err)
		}
	}
}

// finished strips the virtio-net header from b and returns the frame, or
// an error where the header asks for an offload (a checksum to fill in,
// GSO): the tap it came from offers none (no TUNSETOFFLOAD), so the stack
// finished the frame before tun took it, and Net.Transmit sends a frame
// behind a header of zeros.
func finished(b []byte) ([]byte, error) {
	h, frame, err := tuntap.ParseVnetHdr(b, vhostnet.HdrLen)
	if err != nil {
		return nil, err
	}
	if h.Flags&tuntap.VnetHdrFNeedsCsum != 0 || h.GSOType != tuntap.VnetHdrGSONone {
		return nil, fmt.Errorf("a frame from a tap without offloads has offloads in its virtio-net header (%v)", h)
	}
	return frame, nil
}

// post posts frames (one) on the TX virtqueue, first taking back the
// buffers vhost has sent, and waits for one to come free while all are
// in flight.
func (p *Path) post(frames [][]byte) error {
	start := time.Now()
	for {
		if _, err := p.vm.Reclaim(); err != nil {
			return err
		}
		n, err := p.vm.Transmit(frames)
		if err != nil || n == len(frames) || p.stop.Load() {
			return err
		}
		if time.Since(start) > txLimit {
			return fmt.Errorf("no TX buffer came free in %v (%d in flight)", txLimit, p.vm.TX.Posted())
		}
		time.Sleep(20 * time.Microsecond)
	}
}
